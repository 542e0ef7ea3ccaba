"""retune through the real CLI: a pre-trained model drives MetaSchedule on a small network, the
tuned build really uses the tuned schedules, an unchanged request is skipped, a wall-clock
budget stops the search, and bad requests are refused in one line before any work."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from storage.store import Store
from tasks.constraints import rules_for
from tasks.hardware import resolve_profile
from tests.conftest import SEED_PROFILE, run_cli, run_cli_table, shared_prefect_api

# The shared model is trained on the seed's SEED_PROFILE data; tuning runs on this machine's
# one-thread profile, whatever its CPU.
PROFILE = "local-1t"
RETUNE = ["retune", "tiny_cnn", "--hardware", PROFILE, "--population", "32"]


@pytest.fixture(scope="module")
def store_with_model(pretrained_store, tmp_path_factory):
    """A copy of the shared pre-trained store (tests/conftest.py) that retunes may write."""
    source, model_id = pretrained_store
    db = tmp_path_factory.mktemp("retune") / "store.duckdb"
    shutil.copy(source, db)
    return str(db), model_id


def _tuning_rows(db):
    with Store(db, read_only=True) as store:
        cur = store.con.execute("SELECT * FROM tuning_runs ORDER BY created_at")
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]


@pytest.mark.slow
@pytest.mark.xdist_group("retune-history")  # the README test below reads its tuning runs
def test_retune_with_the_best_model_then_skip_then_a_time_budget(store_with_model):
    db, model_id = store_with_model
    result = run_cli(*RETUNE, "--trials", "16", "--scheduler", "dual", "--db", db)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "dual scheduling: 6 (task, design space) pairs" in result.stdout + result.stderr
    (run,) = _tuning_rows(db)
    assert run["scheduler"] == "dual"
    # the rules are on where they were validated (AVX2: narrow vectors), off elsewhere
    assert (run["rejected_by_rules"] > 0) == bool(rules_for(resolve_profile(PROFILE)))
    assert run["cost_model"] == model_id  # the default: the best model for this profile
    # it says which model and why; this one never saw this machine's data (unless it is the
    # seed's own CPU profile)
    said = result.stdout + result.stderr
    assert f"cost model {model_id} (xgb): " in said
    if resolve_profile(PROFILE).name != SEED_PROFILE:
        assert "WARNING: it has never seen" in said
    assert run["trials"] == 16 and run["tasks_tuned"] == 2 and run["tasks_total"] == 8
    assert run["tuned_functions"] == 2  # the build really used the tuned schedules
    assert run["tuned_latency_s"] < run["untuned_latency_s"]
    records = Path(run["database_dir"]) / "database_tuning_record.json"
    assert len(records.read_text().splitlines()) == 16  # exported MetaSchedule database
    with Store(db, read_only=True) as store:
        curve = store.query("SELECT trials, estimated_latency_s FROM tuning_curve WHERE "
                            "tuning_id = ? ORDER BY point", [run["tuning_id"]])
    assert [t for t, _ in curve] == sorted(t for t, _ in curve) and curve[-1][0] == 16
    assert curve[-1][1] is not None  # both tasks measured: the estimate exists

    again = run_cli(*RETUNE, "--trials", "16", "--scheduler", "dual", "--db", db)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "retune skipped" in again.stdout + again.stderr
    assert len(_tuning_rows(db)) == 1

    timed = run_cli(*RETUNE, "--trials", "200", "--minutes", "0.05", "--cost-model",
                    "metaschedule-xgb", "--db", db)
    assert timed.returncode == 0, timed.stderr[-3000:]
    newest = _tuning_rows(db)[-1]
    assert newest["cost_model"] == "metaschedule-xgb" and newest["trials"] < 200
    assert newest["minutes_budget"] == 0.05


def test_a_model_for_other_features_is_refused(store_with_model):
    db, model_id = store_with_model
    with Store(db) as store:
        row = store.model_row(model_id)
        spec = {**json.loads(row["data_spec_json"]), "extractor": "tlp_primitive_sequence"}
        store.register_model({**row, "model_id": "other-features",
                              "data_spec_json": json.dumps(spec)})
    result = run_cli(*RETUNE, "--cost-model", "other-features", "--db", db)
    assert result.returncode == 2
    assert "trained on 'tlp_primitive_sequence' features" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


BAD_REQUESTS = [
    (["retune", "resnet1000"], "unknown network 'resnet1000'"),
    (["retune", "tiny_cnn", "--hardware", "tpu-v9"], "unknown hardware profile 'tpu-v9'"),
    ([*RETUNE, "--trials", "0"], "expected a positive integer, got 0"),
    ([*RETUNE, "--minutes", "-1"], "minutes must be positive"),
    ([*RETUNE, "--flops-share", "1.5"], "flops share must be in (0, 1]"),
    ([*RETUNE, "--cost-model", "no-such-model"], "no model 'no-such-model'"),
    ([*RETUNE, "--scheduler", "instant", "--cost-model", "metaschedule-xgb"],
     "the instant scheduler ranks candidates with a learned model"),
]


@pytest.fixture(scope="module")
def refused(store_with_model):
    """The whole table through the CLI's main() in one process (tests/conftest.py); none of
    the requests may leave a tuning run behind."""
    db, _ = store_with_model
    before = _tuning_rows(db)
    answers = run_cli_table([[*args, "--db", db] for args, _ in BAD_REQUESTS])
    assert _tuning_rows(db) == before
    return answers


@pytest.mark.xdist_group("retune-refusals")  # one batch, on one worker
@pytest.mark.parametrize("args, message", BAD_REQUESTS)
def test_bad_retune_requests(refused, args, message):
    result = refused[BAD_REQUESTS.index((args, message))]
    assert result["code"] == 2 and message in result["stderr"]


README_QUERY = re.compile(r'^\.venv/bin/duckdb -readonly data/tenforge\.duckdb "(.+)"$', re.M)


@pytest.mark.slow
@pytest.mark.xdist_group("retune-history")  # same worker, after the retune test
def test_the_readme_queries_run_as_written_in_the_duckdb_cli(store_with_model):
    """After the retune test: every example query of the README runs in the pinned duckdb CLI
    (on this store instead of data/tenforge.duckdb) and finds rows where it should."""
    db, _ = store_with_model
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    queries = README_QUERY.findall(readme)
    assert len(queries) >= 8
    cli = str(Path(sys.executable).with_name("duckdb"))
    outputs = []
    for sql in queries:
        out = subprocess.run([cli, "-readonly", "-csv", db, sql], capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, f"{sql}\n{out.stderr}"
        outputs.append(out.stdout.strip().splitlines())
    assert all(len(lines) >= 2 for i, lines in enumerate(outputs) if i != 2), outputs  # 2: errors
    report = run_cli("report", "--db", db)
    assert report.returncode == 0, report.stderr[-2000:]
    assert "Tuning history" in report.stdout and "metaschedule-xgb" in report.stdout


@pytest.mark.slow
def test_sigterm_ends_the_search_and_keeps_what_it_measured(store_with_model):
    """A SIGTERM (what `timeout`, a worker or a service stop sends) mid-search: the retune
    stops after the batch in flight, compiles with what it found, times it, and records the
    run with its reason; the process exits cleanly."""
    import os
    import signal
    import time

    from tests.conftest import ROOT

    db, _ = store_with_model
    before = len(_tuning_rows(db))
    proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *RETUNE, "--trials", "400",
                             "--cost-model", "metaschedule-xgb", "--force", "--db", db],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, env={**os.environ, "PREFECT_API_URL": shared_prefect_api()})
    lines = []
    for line in proc.stdout:  # wait until the search has measured something
        lines.append(line)
        if "tuned " in line and " trials in " in line:
            break
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    rest, _ = proc.communicate(timeout=600)
    out = "".join(lines) + rest
    assert proc.returncode == 0, out[-3000:]
    assert "SIGTERM: stopping after the batch in flight" in out
    rows = _tuning_rows(db)
    assert len(rows) == before + 1
    newest = rows[-1]
    assert newest["stop_reason"] == "interrupt" and 0 < newest["trials"] < 400
    assert newest["tuned_functions"] >= 1 and newest["tuned_latency_s"] > 0
    assert time.monotonic() - sent < 300  # promptly: one batch, then compile and time


@pytest.mark.slow
def test_instant_tuning_gives_every_tuned_task_a_model_chosen_schedule(store_with_model):
    """No search: per task, rank sampled candidates with the model, measure the top few."""
    db, model_id = store_with_model
    result = run_cli(*RETUNE, "--scheduler", "instant", "--trials", "16", "--flops-share", "1.0",
                     "--force", "--db", db)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "instant: per task, rank 32 sampled candidates with the model and measure the top 4" \
        in result.stdout + result.stderr
    newest = _tuning_rows(db)[-1]
    assert newest["scheduler"] == "instant" and newest["cost_model"] == model_id
    assert newest["trials"] == 16 and newest["tasks_tuned"] == 4 and newest["stop_reason"] == \
        "trials"
    assert newest["tuned_functions"] == 4  # every tuned task's schedule reached the build
    assert newest["tuned_latency_s"] < newest["untuned_latency_s"]


@pytest.mark.slow
def test_a_killed_retune_resumes_from_its_tuning_database(store_with_model):
    """SIGKILL (nothing gets to clean up) mid-search, then the same request again: it starts
    from what the killed run measured, and its database and build hold those records."""
    import os
    import signal

    from tests.conftest import ROOT

    db, _ = store_with_model
    args = [sys.executable, "-m", "tenforge.cli", *RETUNE, "--cost-model", "metaschedule-xgb",
            "--force", "--db", db]
    env = {**os.environ, "PREFECT_API_URL": shared_prefect_api()}
    proc = subprocess.Popen([*args, "--trials", "400"], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env)
    for line in proc.stdout:
        if "tuned " in line and " trials in " in line:
            break
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    with Store(db, read_only=True) as store:
        killed = store.scalar("SELECT run_id FROM runs WHERE flow = 'retune' AND status = "
                              "'running' ORDER BY started_at DESC LIMIT 1")
    records = Path(db).parent / "tuning" / killed / "database_tuning_record.json"
    measured = len(records.read_text().splitlines())
    assert measured >= 1
    again = subprocess.run([*args, "--trials", "8"], cwd=ROOT, capture_output=True, text=True,
                           timeout=900, env=env)
    out = again.stdout + again.stderr
    assert again.returncode == 0, out[-3000:]
    assert f"resuming from {measured} measured candidates of unfinished retune {killed}" in out
    newest = _tuning_rows(db)[-1]
    resumed = Path(newest["database_dir"]) / "database_tuning_record.json"
    assert len(resumed.read_text().splitlines()) >= measured + newest["trials"]
    assert newest["tuned_functions"] >= 1
