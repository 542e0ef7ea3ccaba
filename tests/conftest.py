"""Shared fixtures. The CLI's bootstrap sets the same environment the product runs with."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from bench._data import scratch_dir  # removed when the test process exits
from tenforge.cli import bootstrap

bootstrap()


# One Prefect home per test process (each pytest-xdist worker is one): the flows the tests run
# start Prefect's ephemeral API on its SQLite file, and two workers must not share one. It also
# leaves the developer's ~/.prefect alone.
os.environ["PREFECT_HOME"] = str(scratch_dir(
    f"prefect-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"))
ROOT = Path(__file__).resolve().parents[1]
LOCAL_TARGET = {"kind": "llvm", "num-cores": 1}


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "store.duckdb")


_API: dict[str, object] = {}


def shared_prefect_api() -> str:
    """One Prefect API server per test process (started on first use, stopped at exit) that
    the flows run by `run_cli` report to. Without it every `tenforge` process that runs a flow
    starts and stops Prefect's temporary server: ~5 s of CPU each, some 40 times per run."""
    if "url" not in _API:
        from tenforge.service import service_env, spawn_server, wait_healthy
        from tests.service_client import free_port

        port = free_port()
        url = f"http://127.0.0.1:{port}/api"
        home = Path(os.environ["PREFECT_HOME"])
        server = spawn_server("127.0.0.1", port, service_env(url, home), home / "server.log")
        wait_healthy(url, server, home / "server.log", timeout_s=120)
        atexit.register(lambda: os.killpg(server.pid, signal.SIGKILL))
        _API["url"] = url
    return str(_API["url"])


def run_cli(*args: str, timeout: float = 600, env: dict | None = None,
            ephemeral: bool = False, cwd: str | Path = ROOT) -> subprocess.CompletedProcess:
    """Run `tenforge ARGS` as a user would, in a fresh process (in `cwd`). Its flows report to
    the test process's Prefect server (`shared_prefect_api`), or with `ephemeral` to a
    temporary one of their own, as `./run pipeline` does."""
    run_env = {**os.environ, **(env or {})}
    if ephemeral:  # its own Prefect home too: two servers on one SQLite file stall each other
        run_env.pop("PREFECT_API_URL", None)
        run_env["PREFECT_HOME"] = str(scratch_dir("prefect-ephemeral"))
    elif "PREFECT_API_URL" not in run_env:
        run_env["PREFECT_API_URL"] = shared_prefect_api()
    # its own session, so a timeout ends its workers too, after their stacks are written down
    proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=cwd, env=run_env,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stacks = process_stacks(proc.pid)
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        raise AssertionError(f"`tenforge {' '.join(args)}` ran past {timeout:.0f} s. Where each "
                             f"of its processes was:\n{stacks}\n--- its stderr, last lines:\n"
                             f"{err[-3000:]}") from None
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def process_stacks(pid: int) -> str:
    """The Python stacks of `pid` and its descendants (py-spy), to tell a stall from slowness
    when a test's command runs past its time."""
    import shutil

    import psutil

    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    try:
        procs = [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]
    except psutil.NoSuchProcess:
        return "(gone)"
    said = []
    for p in procs:
        try:
            head = f"pid {p.pid} ({p.status()}, {sum(p.cpu_times()[:2]):.0f} s CPU): " \
                   f"{' '.join(p.cmdline())[:160]}"
        except psutil.Error:
            continue
        said.append(f"{head}\n{_py_spy_dump(spy, p.pid)}")
    return "\n".join(said)


def _py_spy_dump(spy: str | None, pid: int) -> str:
    """One process's stacks, or why there are none: the diagnosis must never hide the timeout
    it explains (a py-spy that hangs or fails says so and the next process is dumped)."""
    if not spy:
        return "(no py-spy)"
    try:
        dumped = subprocess.run([spy, "dump", "--pid", str(pid)], capture_output=True, text=True,
                                timeout=30)
    except subprocess.TimeoutExpired:
        return "(py-spy dump took over 30 s)"
    return dumped.stdout or f"(py-spy: {dumped.stderr.strip()[-300:]})"


def run_cli_table(cases: list[list[str]], env: dict | None = None) -> list[dict]:
    """`tenforge ARGS` for every ARGS of a table of refusals, in one process (the CLI's main()
    per case): each answer is {"code": exit status, "stderr": what it printed}. A table of
    30 refusals in fresh processes pays ~4 s of imports 30 times."""
    from bench._cli_batch import run_in_one_process

    return run_in_one_process(cases, env=env)


def assert_refused(answer: dict, message: str) -> None:
    """A run_cli_table answer: exit status 2 and one line that names the problem."""
    from bench._cli_batch import refused_cleanly

    assert refused_cleanly(answer, message), answer


@pytest.fixture(scope="session")
def seed_store(tmp_path_factory) -> str:
    """A store holding the shipped seed dataset (read it; copy it before writing)."""
    from storage.seed import load_shards

    db = str(tmp_path_factory.mktemp("seed-store") / "seed.duckdb")
    load_shards(db, progress=lambda _: None)
    return db


# The seed's data trains the shared model (a data name: any machine can read it).
SEED_PROFILE = "cpu-znver3-avx2-1t"
# The seed's smallest CPU profile (1,772 measurements): what tests that only need *some*
# source data train on, in seconds instead of minutes on the whole seed.
SMALL_SEED_PROFILE = "cpu-emeraldrapids-avx512-1t"


@pytest.fixture(scope="session")
def pretrained_store(seed_store, tmp_path_factory) -> tuple[str, str]:
    """(store, model id): the seed plus one small xgb pre-trained on SEED_PROFILE, built once
    per test process: the pretrain flow's own step and run record, in this process (the CLI
    and flow are tested in tests/flows/test_transfer.py; a fresh process and Prefect flow
    here cost ~10 s per test process). Copy the store before writing to it; the model's
    artifact stays where it is (artifacts are never edited)."""
    import shutil
    import uuid

    from storage.store import Store
    from tasks.training import pretrain

    db = str(tmp_path_factory.mktemp("pretrained") / "store.duckdb")
    shutil.copy(seed_store, db)
    run_id = str(uuid.uuid4())
    with Store(db) as store:
        store.start_run(run_id, "pretrain", {"hardware": [SEED_PROFILE], "family": "xgb"},
                        hardware=SEED_PROFILE)
    out = pretrain(db, [SEED_PROFILE], [], "xgb", {"n_estimators": 30}, None, 0, run_id,
                   log=lambda _: None)
    with Store(db) as store:
        store.finish_run(run_id, "completed", out)
    return db, out["model_id"]


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
