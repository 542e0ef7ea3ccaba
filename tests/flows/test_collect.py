"""The collect flow through the real CLI: stores real measurements, survives SIGKILL, refuses
bad input before writing anything."""

import os
import signal
import subprocess
import sys
import time

import pytest

from storage.store import Store
from tasks.hardware import detect_local_profiles
from tests.conftest import ROOT, assert_refused, run_cli, run_cli_table, shared_prefect_api

PROFILE = detect_local_profiles()[-1].name  # the 1-thread profile: cheap and quiet


def _collect_args(db):
    return ["collect", "--hardware", PROFILE, "--networks", "matmul,dense_bias_relu",
            "--candidates", "6", "--measure-batch", "2", "--db", db]


def _counts(db):
    with Store(db, read_only=True) as store:
        return store.query(
            "SELECT (SELECT count(*) FROM candidates), (SELECT count(*) FROM measurements), "
            "(SELECT count(DISTINCT candidate_id) FROM measurements), "
            "(SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM measurements m "
            " WHERE m.candidate_id = c.candidate_id))")[0]


def _start_until_first_batch(args, env):
    """`tenforge ARGS` started in its own session, read until its first batch of 2 has been
    committed (or 300 s): (the process, the lines it printed so far)."""
    proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=env)
    deadline = time.monotonic() + 300
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "measured 2/" in line or time.monotonic() > deadline:
            break
    return proc, seen


@pytest.mark.slow
def test_killed_collection_resumes_and_measures_each_candidate_once(db):
    proc, seen = _start_until_first_batch(
        _collect_args(db), {**os.environ, "PREFECT_API_URL": shared_prefect_api()})
    os.killpg(proc.pid, signal.SIGKILL)  # right after the first batch has been committed
    proc.wait()
    assert any("measured 2/" in line for line in seen), "".join(seen[-20:])
    time.sleep(1)
    candidates, measurements, distinct, missing = _counts(db)
    assert 0 < measurements < candidates and missing > 0  # it really was interrupted

    result = run_cli(*_collect_args(db))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    candidates_after, measurements, distinct, missing = _counts(db)
    assert candidates_after == candidates  # same seed: the same candidates, none added
    assert measurements == distinct == candidates and missing == 0
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT count(*) FROM v_measurements WHERE hardware = ? AND "
                            "error_kind IS NULL", [PROFILE]) > 0
        assert store.scalar("SELECT count(*) FROM runs WHERE status = 'completed'") == 1


@pytest.mark.slow
def test_a_sigterm_ends_collect_with_its_measurements_and_no_process_left(db, tmp_path):
    """What `timeout` or `kill` sends, on the embedded defaults (Prefect's ephemeral API, as
    `./run pipeline`): the process exits 143 and keeps what it measured, and no child outlives
    it. Python's default SIGTERM skipped `atexit`, where Prefect stops its temporary server, so
    that server ran on at ~8% of a vCPU beside whatever came next (a CI run, here)."""
    import psutil

    env = {**os.environ, "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    args = ["collect", "--hardware", PROFILE, "--networks", "matmul", "--candidates", "200",
            "--measure-batch", "2", "--db", db]
    proc, seen = _start_until_first_batch(args, env)
    try:
        assert any("measured 2/" in line for line in seen), "".join(seen[-20:])
        children = psutil.Process(proc.pid).children(recursive=True)
        assert any("uvicorn" in " ".join(c.cmdline()) for c in children)  # the ephemeral API
        proc.send_signal(signal.SIGTERM)
        # an orphaned child would keep the pipe open too, so this read would not end
        rest, _ = proc.communicate(timeout=120)
        assert proc.returncode == 143, "".join(seen[-20:]) + rest[-3000:]
        assert "terminated (SIGTERM)" in rest
        _, still_running = psutil.wait_procs(children, timeout=10)
        assert not still_running, [" ".join(c.cmdline())[:120] for c in still_running]
    finally:
        try:  # the group outlives its leader while an orphan is in it
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    candidates, measurements, _, missing = _counts(db)
    assert 0 < measurements < candidates and missing > 0


BAD_INPUT = [
    (["collect", "--hardware", "nope"], "unknown hardware profile 'nope'"),
    (["collect", "--networks", "resnet19"], "unknown network 'resnet19'"),
    (["collect", "--networks", ","], "networks is empty"),
    (["collect", "--candidates", "0"], "expected a positive integer, got 0"),
    (["collect", "--batch-size", "-2"], "expected a positive integer, got -2"),
    (["collect", "--graph", "nchwc"], "argument --graph: invalid choice: 'nchwc'"),
    (["collect", "--db", "/no/such/folder/x.duckdb"], "folder /no/such/folder does not exist"),
    (["query", "SELECT 1", "--db", "/no/such.duckdb"], "does not exist"),
    (["export-ms", "/tmp/x", "--hardware", "h", "--db", "/no/such.duckdb"], "does not exist"),
]


@pytest.fixture(scope="module")
def refused(tmp_path_factory):
    """The whole table through the CLI's main() in one process (tests/conftest.py)."""
    default = tmp_path_factory.mktemp("default") / "default.duckdb"
    answers = run_cli_table([args for args, _ in BAD_INPUT], env={"TENFORGE_DB": str(default)})
    assert not default.exists()  # no case wrote the default store
    return answers


@pytest.mark.xdist_group("collect-refusals")  # one batch, on one worker
@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_cli_input_gets_one_line_and_exit_2(refused, args, message):
    assert_refused(refused[BAD_INPUT.index((args, message))], message)
