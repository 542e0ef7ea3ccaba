"""The search flow through the real CLI on the shipped seed data: trials land in DuckDB, the
winner is registered with its lineage and loads, a re-run continues the study, bad input is
refused in one line before any work."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from models.dataset import DataSpec, load_dataset
from models.registry import load_model
from models.splits import SplitSpec, make_split
from storage.store import Store
from tests.conftest import assert_refused, run_cli, run_cli_table

# one profile of the seed (~10k candidates, a third of it): the flow, not the data size, is tested
DATA = ["--hardware", "cpu-znver3-sse42-1t"]
ARGS = [*DATA, "--families", "xgb,mlp", "--max-epochs", "3", "--time-budget", "300", "--seed",
        "1"]


@pytest.fixture
def store(seed_store, tmp_path):
    db = tmp_path / "store.duckdb"
    shutil.copy(seed_store, db)
    return str(db)


@pytest.mark.slow
def test_search_registers_the_best_model_and_resumes(store):
    result = run_cli("search", *ARGS, "--trials", "3", "--db", store)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    with Store(store, read_only=True) as s:
        trials = s.query("SELECT trial_number, state, family FROM search_trials ORDER BY 1")
        assert [t[0] for t in trials] == [0, 1, 2]
        assert {t[2] for t in trials} <= {"xgb", "mlp"}
        (model_id, kind, path, spec, metrics, study, trial, split), = s.query(
            "SELECT model_id, kind, path, data_spec_json, metrics_json, study_name, "
            "trial_number, split_json FROM models")
        assert s.scalar("SELECT status FROM runs WHERE flow = 'search'") == "completed"
    assert kind in ("xgb", "mlp") and study.endswith("by_task.seed1") and trial in (0, 1, 2)
    test = json.loads(metrics)
    assert 0 < test["peak1"] <= 1 and 0 <= test["pairwise"] <= 1
    model = load_model(path)  # the artifact is usable as is, and knows where it came from
    data = load_dataset(store, DataSpec.from_json(json.loads(spec)))
    assert np.isfinite(model.predict(data)).all()
    lineage = json.loads((Path(path) / "model.json").read_text())["lineage"]
    train = data.subset(make_split(data, SplitSpec(**json.loads(split))).train)
    assert lineage["study"] == study and lineage["data_fingerprint"] == train.fingerprint()

    again = run_cli("search", *ARGS, "--trials", "4", "--db", store)  # continues: one more
    assert again.returncode == 0, again.stderr[-3000:]
    assert "3 trials done, running up to 1 more" in again.stdout + again.stderr
    with Store(store, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM search_trials") == 4
        assert s.scalar("SELECT count(*) FROM models") == 2

    clash = run_cli("search", *DATA, "--families", "lgbm", "--max-epochs", "3", "--seed", "1",
                    "--db", store)
    assert clash.returncode == 2
    assert "exists with another search space" in clash.stderr.strip().splitlines()[-1]


BAD_INPUT = [
    (["--families", "gbdt"], "unknown model family gbdt"),
    (["--split", "by_network"], "split by_network needs holdout="),
    (["--register-if-better"], "use it with --split by_network --holdout NETWORKS"),
    (["--split", "by_network", "--holdout", "vgg"], "holdout network vgg is not in the dataset"),
    (["--hardware", "tpu-v9"], "hardware tpu-v9 has no data"),
    (["--networks", "alexnet"], "network alexnet has no data"),
    (["--time-budget", "0"], "time budget > 0 s"),
    (["--networks", "mlp", "--split", "by_network", "--holdout", "mlp"],
     "leaves no training data"),
]


@pytest.fixture(scope="module")
def refused(seed_store, tmp_path_factory):
    """The whole table through the CLI's main() in one process (tests/conftest.py); none of
    the requests may start a search."""
    db = tmp_path_factory.mktemp("refused") / "store.duckdb"
    shutil.copy(seed_store, db)
    answers = run_cli_table([["search", *args, "--db", str(db)] for args, _ in BAD_INPUT])
    with Store(db, read_only=True) as s:
        assert s.scalar("SELECT count(*) FROM runs WHERE flow = 'search'") == 0
    return answers


@pytest.mark.xdist_group("search-refusals")  # one batch, on one worker
@pytest.mark.parametrize("args, message", BAD_INPUT)
def test_bad_search_input_is_refused_before_any_work(refused, args, message):
    assert_refused(refused[BAD_INPUT.index((args, message))], message)


def test_search_on_a_missing_store(tmp_path):
    result = run_cli("search", "--db", str(tmp_path / "none.duckdb"))
    assert result.returncode == 2 and "does not exist" in result.stderr
