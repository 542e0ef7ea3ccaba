"""The bad-input table: every entry must exit with status 2 and one line naming the problem,
and leave the store unchanged (bench/faults.py runs it; tests/test_faults.py too)."""

from __future__ import annotations

import json
from pathlib import Path

from bench._cli_batch import refused_cleanly, run_in_one_process
from bench._faults_common import PROFILE, cli
from storage.store import Store


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
        (["pipeline", "--sources", "tpu-v9", "--db", db],
         "no data of source profile(s) tpu-v9"),
        (["pipeline", "--sources", "local", "--db", db], "is the target: leave it out"),
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
        (["retune", "tiny_cnn", "--warm-start", "-1", "--db", db],
         "expected a whole number, 0 or more"),  # (0: no warm start, since session 113)
        (["retune", "tiny_cnn", "--graph", "nchwc", "--db", db], "invalid choice: 'nchwc'"),
        (["retune", "tiny_cnn", "--warm-start", "4", "--cost-model", "metaschedule-xgb",
          "--db", db], "--warm-start ranks candidates with a learned model"),
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
    from storage.queries import measured_inventory, measured_profiles

    with Store(db, read_only=True) as store:
        # a profile with featurized tiny_cnn measurements (not every profile of the seed has)
        hardware = next(h for h in measured_profiles(store) if measured_inventory(
            store, [h], ["tiny_cnn"], DataSpec(hardware=(h,)).extractor)[0])
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


def _store_counts(db: Path) -> list[tuple]:
    """What a refused input must leave as it was: measurements, runs, models."""
    with Store(db, read_only=True) as store:
        return store.query("SELECT (SELECT count(*) FROM measurements), "
                           "(SELECT count(*) FROM runs), (SELECT count(*) FROM models)")


def check_bad_inputs(tmp: Path, separate_processes: int = 2) -> tuple[int, list[str]]:
    """Run the table (the first `separate_processes` cases also as real `tenforge` processes,
    so the exit status path through the console entry point is covered too)."""
    db = tmp / "store.duckdb"
    cli("dataset", "load-seed", "--db", str(db))  # a store with data, so checks go deep
    register_truncated_model(str(db))
    before = _store_counts(db)
    failures = []
    cases = bad_inputs(tmp)
    answers = run_in_one_process([args for args, _ in cases])
    for args, phrase in cases[:separate_processes]:
        result = cli(*args, timeout=300)
        cases.append((args, phrase))
        answers.append({"code": result.returncode, "stderr": result.stderr})
    for (args, phrase), answer in zip(cases, answers):
        lines = answer["stderr"].strip().splitlines()
        ok = refused_cleanly(answer, phrase)
        if not ok:
            failures.append(f"{' '.join(args)} -> exit {answer['code']}: "
                            f"{answer['stderr'].strip()[-300:]}")
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(args)[:70]:70} "
              f"{lines[-1][:90] if lines else ''}", flush=True)
    after = _store_counts(db)
    if after != before:
        failures.append(f"the store changed: {before} -> {after}")
    return len(cases), failures
