"""Shared fixtures. The CLI's bootstrap sets the same environment the product runs with."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tenforge.cli import bootstrap

bootstrap()
# One Prefect home per test process (each pytest-xdist worker is one): the flows the tests run
# start Prefect's ephemeral API on its SQLite file, and two workers must not share one. It also
# leaves the developer's ~/.prefect alone.
os.environ["PREFECT_HOME"] = tempfile.mkdtemp(
    prefix=f"tenforge-prefect-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}-")
ROOT = Path(__file__).resolve().parents[1]
LOCAL_TARGET = {"kind": "llvm", "num-cores": 1}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "store.duckdb")


def run_cli(*args: str, timeout: float = 600, env: dict | None = None
            ) -> subprocess.CompletedProcess:
    """Run `tenforge ARGS` as a user would, in a fresh process."""
    return subprocess.run([sys.executable, "-m", "tenforge.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT, env={**os.environ, **(env or {})})


def run_cli_table(cases: list[list[str]], env: dict | None = None) -> list[dict]:
    """`tenforge ARGS` for every ARGS of a table of refusals, in one process (the CLI's main()
    per case): each answer is {"code": exit status, "stderr": what it printed}. A table of
    30 refusals in fresh processes pays ~4 s of imports 30 times."""
    from bench._cli_batch import run_in_one_process

    return run_in_one_process(cases, env=env)


@pytest.fixture(scope="session")
def seed_store(tmp_path_factory) -> str:
    """A store holding the shipped seed dataset (read it; copy it before writing)."""
    from storage.seed import load_shards

    db = str(tmp_path_factory.mktemp("seed-store") / "seed.duckdb")
    load_shards(db, progress=lambda _: None)
    return db


@pytest.fixture(scope="session")
def service(tmp_path_factory):
    """`tenforge service start` on a free port, in its own folder, writing to its own store
    (TENFORGE_DB, the default `db` of every deployment); stopped at the end of the session."""
    from tests.service_client import free_port

    folder = tmp_path_factory.mktemp("service")
    env = {"TENFORGE_SERVICE_DIR": str(folder), "TENFORGE_DB": str(folder / "store.duckdb")}
    port = free_port()
    started = run_cli("service", "start", "--port", str(port), env=env, timeout=900)
    assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
    try:
        yield {"api": f"http://127.0.0.1:{port}/api", "ui": f"http://127.0.0.1:{port}",
               "port": port, "env": env, "folder": folder, "db": env["TENFORGE_DB"]}
    finally:
        stopped = run_cli("service", "stop", env=env, timeout=120)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout, stopped.stderr
