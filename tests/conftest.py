"""Shared fixtures. The CLI's bootstrap sets the same environment the product runs with."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tenforge.cli import bootstrap

bootstrap()
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


@pytest.fixture(scope="session")
def seed_store(tmp_path_factory) -> str:
    """A store holding the shipped seed dataset (read it; copy it before writing)."""
    from storage.seed import load_shards

    db = str(tmp_path_factory.mktemp("seed-store") / "seed.duckdb")
    load_shards(db, progress=lambda _: None)
    return db
