"""Faults survived and bad input refused: kill the collect flow at random points, then check
nothing was lost or duplicated; feed the CLI wrong inputs and check each is refused cleanly.

1. Kills: `tenforge collect` (small ops on the 1-thread profile) is started --kills times and
   SIGKILLed (its whole process group: flow, Prefect server, measurement workers): a third at a
   random time in the first seconds (start-up, sampling), the rest just after a random
   measurement batch was committed. After each kill the store must open, every candidate must have its features, and no
   measurement seen before may disappear (lost) or appear twice (duplicates). A final run
   completes the collection: every candidate measured exactly once.
2. Search and pretrain kills: the search flow is SIGKILLed while an Optuna trial runs; the
   next run must mark that trial FAIL (interrupted), run it again, and copy every finished
   trial to search_trials. `pretrain` is SIGKILLed at random times; the registry may only ever
   list models whose artifacts load.
3. Bad input: every entry of bad_inputs() must exit with status 2 and one line naming the
   problem, and leave the store unchanged.

    .venv/bin/python bench/faults.py [--kills 20] [--search-kills 5] [--pretrain-kills 5]
        [--seed 0]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from storage.store import Store  # noqa: E402
from tasks.hardware import detect_local_profiles  # noqa: E402

PROFILE = detect_local_profiles()[-1].name


def collect_args(db: str, candidates: int) -> list[str]:
    return ["collect", "--hardware", PROFILE, "--networks", "matmul,dense_bias_relu,conv2d",
            "--candidates", str(candidates), "--measure-batch", "4", "--db", db]


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tenforge.cli", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def store_state(db: str) -> dict:
    """What must hold after any kill: the store opens and its counts add up."""
    with Store(db, read_only=True) as store:
        measured = {(c, s) for c, s in store.query(
            "SELECT candidate_id, settings_id FROM measurements")}
        rows = store.scalar("SELECT count(*) FROM measurements")
        return {
            "measured": measured,
            "duplicates": rows - len(measured),
            "candidates": store.scalar("SELECT count(*) FROM candidates"),
            "without_features": store.scalar(
                "SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT 1 FROM features f "
                "WHERE f.candidate_id = c.candidate_id)"),
            "partial": store.scalar("SELECT count(*) FROM measurements WHERE (error_kind IS "
                                    "NULL) = (mean_latency_s IS NULL)"),
        }


def kill_loop(db: str, kills: int, candidates: int, rng: random.Random,
              delays: tuple[float, float] = (3.0, 40.0)) -> dict:
    lost = duplicates = broken = 0
    before: set = set()
    if Path(db).exists():
        before = store_state(db)["measured"]
    for number in range(1, kills + 1):
        # A third of the kills land anywhere in the first `delays` seconds (start-up, import,
        # sampling); the rest right after a random measurement batch has been committed, so
        # kills cover the measuring phase however slow the machine is.
        early = rng.random() < 1 / 3
        delay = rng.uniform(*delays)
        after_batches = rng.randint(1, 3)
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli",
                                 *collect_args(db, candidates)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True)
        outcome = "finished before the kill"
        start = time.monotonic()
        if early:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                outcome = f"killed after {delay:.1f} s"
        else:
            batches = 0
            for line in proc.stdout:
                if "% measured " in line:  # a committed batch (tasks.collect.Progress)
                    batches += 1
                    if batches >= after_batches:
                        time.sleep(rng.uniform(0.0, 2.0))  # mid-way into the next batch
                        outcome = (f"killed {time.monotonic() - start:.1f} s in, after "
                                   f"{batches} committed batches")
                        break
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stdout:
            proc.stdout.close()
        time.sleep(0.5)
        if not Path(db).exists():
            print(f"kill {number}/{kills}: {outcome}; no store yet", flush=True)
            continue
        try:
            state = store_state(db)
        except Exception as exc:  # noqa: BLE001 - a store that does not open is the failure
            broken += 1
            print(f"kill {number}/{kills}: {outcome}; STORE BROKEN: {exc}", flush=True)
            continue
        lost += len(before - state["measured"])
        duplicates += state["duplicates"]
        broken += bool(state["without_features"] or state["partial"])
        print(f"kill {number}/{kills}: {outcome}; {len(state['measured'])} measured of "
              f"{state['candidates']} candidates, lost {len(before - state['measured'])}, "
              f"duplicates {state['duplicates']}", flush=True)
        before = state["measured"]
    return {"lost": lost, "duplicates": duplicates, "inconsistent": broken}


def search_args(db: str, trials: int) -> list[str]:
    return ["search", "--families", "mlp", "--networks", "resnet18,mobilenet_v2",
            "--max-epochs", "60", "--trials", str(trials), "--time-budget", "900", "--seed", "3",
            "--db", db]


def running_trials(db: str) -> list[int]:
    """Numbers of the RUNNING trials in the store's Optuna journal (none if no journal)."""
    import optuna

    from models.search import _storage
    from tasks.training import study_storage

    journal = study_storage(db)
    if not journal.exists():
        return []
    storage = _storage(journal)
    return [t.number for summary in optuna.get_all_study_summaries(storage)
            for t in optuna.load_study(study_name=summary.study_name, storage=storage)
            .get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,))]


def kill_during_trials(db: str, kills: int, trials: int, rng: random.Random) -> dict:
    """SIGKILL the search flow while an Optuna trial runs, `kills` times, then finish the study.
    Every killed trial must end FAIL (interrupted) and be run again; the finished trials must
    all be in search_trials; every registered model must load."""
    landed = 0
    for number in range(1, kills + 1):
        # the trial the last kill interrupted is still RUNNING in the journal until this run
        # fails it: wait for a trial of this run
        stale = set(running_trials(db))
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *search_args(db, trials)],
                                cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        start = time.monotonic()
        while proc.poll() is None and not set(running_trials(db)) - stale \
                and time.monotonic() - start < 600:
            time.sleep(0.5)
        time.sleep(rng.uniform(0.0, 2.0))  # somewhere inside the trial
        outcome = "finished before the kill"
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            inside = sorted(set(running_trials(db)) - stale)
            landed += bool(inside)
            outcome = f"killed {time.monotonic() - start:.1f} s in, during trial(s) {inside}"
        proc.wait()
        print(f"search kill {number}/{kills}: {outcome}", flush=True)
    final = cli(*search_args(db, trials))
    import optuna

    from models.search import _storage
    from tasks.training import study_storage

    storage = _storage(study_storage(db))
    (summary,) = optuna.get_all_study_summaries(storage)
    study_trials = optuna.load_study(study_name=summary.study_name, storage=storage).get_trials()
    interrupted = [t.number for t in study_trials if t.user_attrs.get("interrupted")]
    counted = [t for t in study_trials if t.state.is_finished() and t.number not in interrupted]
    with Store(db, read_only=True) as store:
        copied = store.scalar("SELECT count(*) FROM search_trials")
    models, unloadable = registered_models(db)
    return {"exit": final.returncode, "kills_in_a_trial": landed,
            "interrupted": len(interrupted),
            "still_running": sum(t.state.name == "RUNNING" for t in study_trials),
            "counted": len(counted), "not_copied": len(study_trials) - copied,
            "models": models, "unloadable": unloadable}


def registered_models(db: str) -> tuple[int, int]:
    """How many models the registry lists, and how many of their artifacts fail to load."""
    from models.registry import load_model

    with Store(db, read_only=True) as store:
        paths = [p for (p,) in store.query("SELECT path FROM models")]
    unloadable = 0
    for path in paths:
        try:
            load_model(path)
        except Exception:  # noqa: BLE001 - any failure to load counts
            unloadable += 1
    return len(paths), unloadable


def kill_pretrain(db: str, kills: int, rng: random.Random) -> dict:
    """SIGKILL `tenforge pretrain` at random times, then run it to the end: the registry may
    only ever hold models whose artifacts load."""
    args = ["pretrain", "--family", "mlp", "--networks", "resnet18,mobilenet_v2", "--db", db]
    for number in range(1, kills + 1):
        proc = subprocess.Popen([sys.executable, "-m", "tenforge.cli", *args], cwd=ROOT,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        delay = rng.uniform(5.0, 40.0)
        try:
            proc.wait(timeout=delay)
            outcome = "finished before the kill"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            outcome = f"killed after {delay:.1f} s"
        print(f"pretrain kill {number}/{kills}: {outcome}", flush=True)
    final = cli(*args)
    models, unloadable = registered_models(db)
    return {"exit": final.returncode, "models": models, "unloadable": unloadable}


def bad_inputs(tmp: Path) -> list[tuple[list[str], str]]:
    """(arguments, a phrase the one-line error must contain)."""
    not_duckdb = tmp / "not-a-store.duckdb"
    not_duckdb.write_text("hello")
    bad_ms = tmp / "bad-ms"
    bad_ms.mkdir()
    (bad_ms / "database_workload.json").write_text("{not json\n")
    (bad_ms / "database_tuning_record.json").write_text("")
    db = str(tmp / "store.duckdb")
    return [
        (["collect", "--hardware", "nope", "--db", db], "unknown hardware profile 'nope'"),
        (["collect", "--networks", "resnet19", "--db", db], "unknown network 'resnet19'"),
        (["collect", "--networks", ",", "--db", db], "networks is empty"),
        (["collect", "--candidates", "0", "--db", db], "expected a positive integer, got 0"),
        (["collect", "--candidates", "many", "--db", db], "expected a positive integer"),
        (["collect", "--batch-size", "-2", "--db", db], "expected a positive integer, got -2"),
        (["collect", "--db", "/no/such/folder/x.duckdb"], "does not exist"),
        (["collect", "--db", str(tmp)], "is a folder"),
        (["query", "SELECT 1", "--db", "/no/such.duckdb"], "does not exist"),
        (["query", "SELECT 1", "--db", str(not_duckdb)], "not a valid DuckDB database"),
        (["query", "SELEC nonsense", "--db", db], "query failed"),
        (["export-ms", str(tmp / "out"), "--hardware", "h", "--db", "/no/such.duckdb"],
         "does not exist"),
        (["import-ms", str(bad_ms), "--hardware", PROFILE, "--db", db], "not valid JSON"),
        (["import-ms", str(tmp / "missing"), "--hardware", PROFILE, "--db", db], "missing"),
        (["dataset", "load-seed", "--from", str(tmp / "nope"), "--db", db], "no seed dataset"),
        (["dataset", "load-seed", "--hardware", "tpu-v9", "--db", db],
         "no seed shards for hardware tpu-v9"),
        (["dataset", "bogus"], "invalid choice"),
        (["search", "--db", str(tmp / "none.duckdb")], "does not exist"),
        (["search", "--families", "gbdt", "--db", db], "unknown model family gbdt"),
        (["search", "--split", "random", "--db", db], "invalid choice"),
        (["search", "--split", "by_network", "--db", db], "needs holdout="),
        (["search", "--split", "by_network", "--holdout", "vgg", "--db", db],
         "holdout network vgg is not in the dataset"),
        (["search", "--hardware", "tpu-v9", "--db", db], "hardware tpu-v9 has no data"),
        (["search", "--networks", "alexnet", "--db", db], "network alexnet has no data"),
        (["search", "--time-budget", "0", "--db", db], "time budget > 0 s"),
        (["search", "--trials", "-1", "--db", db], "expected a positive integer"),
        (["pretrain", "--family", "gbdt", "--db", db], "unknown model kind 'gbdt'"),
        (["pretrain", "--params", "{oops", "--db", db], "expected a JSON object"),
        (["pretrain", "--params", '{"depth": 3}', "--family", "xgb", "--db", db],
         "xgb has no hyperparameter depth"),
        (["pretrain", "--from-model", "nope", "--db", db], "no model 'nope'"),
        (["transfer", "nope", "--db", db], "no model 'nope'"),
        (["transfer", "--strategy", "distill", "--db", db], "invalid choice"),
        (["transfer", "--samples", "0", "--db", db], "expected a positive integer, got 0"),
        (["hardware", "--bogus"], "unrecognized arguments"),
        (["retune", "resnet19", "--db", db], "unknown network 'resnet19'"),
        (["retune", "tiny_cnn", "--hardware", "nope", "--db", db],
         "unknown hardware profile 'nope'"),
        (["retune", "tiny_cnn", "--trials", "0", "--db", db], "expected a positive integer"),
        (["retune", "tiny_cnn", "--minutes", "0", "--db", db], "minutes must be positive"),
        (["retune", "tiny_cnn", "--flops-share", "1.5", "--db", db], "flops share must be in"),
        (["retune", "tiny_cnn", "--scheduler", "fifo", "--db", db], "invalid choice"),
        (["retune", "tiny_cnn", "--cost-model", "nope", "--db", db], "no model 'nope'"),
        (["retune", "tiny_cnn", "--cost-model", "truncated", "--db", db],
         "cannot load xgb model"),
        (["retune", "tiny_cnn", "--cost-model", "x", "--db", "/no/such.duckdb"],
         "does not exist"),
        (["collect", "--db", "/proc/tenforge.duckdb"], "cannot be written"),
    ]


def register_truncated_model(db: str) -> None:
    """Register model `truncated`: a real xgb artifact whose weights file was cut in half (a
    disk that filled up, a copy that stopped)."""
    from models.dataset import DataSpec, load_dataset
    from models.registry import create_model

    with Store(db, read_only=True) as store:
        hardware = store.scalar("SELECT min(name) FROM hardware")
    data = load_dataset(db, DataSpec(hardware=(hardware,), networks=("tiny_cnn",)))
    model = create_model("xgb", n_estimators=5)
    model.fit(data)
    path = model.save(Path(db).parent / "truncated-model")
    for weights in path.iterdir():
        if weights.name != "model.json":
            weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with Store(db) as store:
        store.register_model({
            "model_id": "truncated", "kind": "xgb", "path": str(path), "config_json": "{}",
            "data_spec_json": json.dumps(data.spec.to_json()), "data_fingerprint": "",
            "train_rows": len(data), "metrics_json": "{}", "train_s": 0.0,
            "tvm_version": "-"})


def check_bad_inputs(tmp: Path) -> tuple[int, list[str]]:
    db = tmp / "store.duckdb"
    cli("dataset", "load-seed", "--db", str(db))  # a store with data, so checks go deep
    register_truncated_model(str(db))
    with Store(db, read_only=True) as store:
        before = store.query("SELECT (SELECT count(*) FROM measurements), "
                             "(SELECT count(*) FROM runs), (SELECT count(*) FROM models)")
    failures = []
    cases = bad_inputs(tmp)
    for args, phrase in cases:
        result = cli(*args, timeout=300)
        lines = result.stderr.strip().splitlines()
        ok = result.returncode == 2 and len(lines) == 1 and phrase in lines[0]
        if not ok:
            failures.append(f"{' '.join(args)} -> exit {result.returncode}: "
                            f"{result.stderr.strip()[-300:]}")
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(args)[:70]:70} {lines[-1][:90] if lines else ''}",
              flush=True)
    with Store(db, read_only=True) as store:
        after = store.query("SELECT (SELECT count(*) FROM measurements), "
                            "(SELECT count(*) FROM runs), (SELECT count(*) FROM models)")
    if after != before:
        failures.append(f"the store changed: {before} -> {after}")
    return len(cases), failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--candidates", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--search-kills", type=int, default=5,
                        help="SIGKILLs of the search flow during a trial")
    parser.add_argument("--pretrain-kills", type=int, default=5)
    parser.add_argument("--skip-bad-inputs", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="tenforge-faults-"))
    db = str(tmp / "killed.duckdb")

    if args.kills:
        totals = kill_loop(db, args.kills, args.candidates, random.Random(args.seed))
        final = cli(*collect_args(db, args.candidates))
        state = store_state(db)
        unmeasured = state["candidates"] - len({c for c, _ in state["measured"]})
        print(f"\nfinal run: exit {final.returncode}; {len(state['measured'])} measurements of "
              f"{state['candidates']} candidates, unmeasured {unmeasured}")
        print(f"kills done: {args.kills}; measurements lost: {totals['lost']}; duplicates: "
              f"{totals['duplicates'] + state['duplicates']}; inconsistent states: "
              f"{totals['inconsistent']}")
    if args.search_kills:
        search_db = str(tmp / "search.duckdb")
        cli("dataset", "load-seed", "--db", search_db)
        found = kill_during_trials(search_db, args.search_kills, 3, random.Random(args.seed))
        print(f"search kills: {args.search_kills} ({found['kills_in_a_trial']} inside a "
              f"trial); trials marked interrupted and re-run: {found['interrupted']}; still "
              f"RUNNING: {found['still_running']}; counted trials: {found['counted']} of 3; "
              f"finished trials missing from search_trials: {found['not_copied']}; final run "
              f"exit {found['exit']}; registered models {found['models']}, unloadable "
              f"{found['unloadable']}")
    if args.pretrain_kills:
        pretrain_db = str(tmp / "pretrain.duckdb")
        cli("dataset", "load-seed", "--db", pretrain_db)
        found = kill_pretrain(pretrain_db, args.pretrain_kills, random.Random(args.seed))
        print(f"pretrain kills: {args.pretrain_kills}; final run exit {found['exit']}; "
              f"registered models {found['models']}, unloadable {found['unloadable']}")
    if not args.skip_bad_inputs:
        tried, failures = check_bad_inputs(tmp)
        print(f"bad inputs tried: {tried}; refused cleanly: {tried - len(failures)}")
        for failure in failures:
            print(f"  not clean: {failure}")


if __name__ == "__main__":
    main()
