"""pretrain and transfer through the real CLI on the shipped seed: the child model is
registered pointing at its parent, bad requests are refused in one line before any work."""

import json
import shutil

import pytest

from storage.store import Store
from tests.conftest import assert_refused, run_cli, run_cli_table

# One worker for the module: its pre-trained store is built once (pytest-xdist).
pytestmark = pytest.mark.xdist_group("transfer")

SOURCE, TARGET = "cpu-znver3-avx2-1t", "cpu-znver3-sse42-1t"
PARAMS = json.dumps({"epochs": 3, "hidden": 32, "head_per_hardware": True})


@pytest.fixture(scope="module")
def pretrained(seed_store, tmp_path_factory):
    db = tmp_path_factory.mktemp("transfer") / "store.duckdb"
    shutil.copy(seed_store, db)
    result = run_cli("pretrain", "--hardware", SOURCE, "--params", PARAMS, "--db", str(db))
    assert result.returncode == 0, result.stderr[-3000:]
    with Store(db, read_only=True) as store:
        (model_id,), = store.query("SELECT model_id FROM models")
        spec = json.loads(store.scalar("SELECT data_spec_json FROM models"))
    assert spec["hardware"] == [SOURCE]
    return str(db), model_id


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["multi_head", "residual"])
def test_transfer_registers_a_child(pretrained, strategy):
    db, parent = pretrained
    result = run_cli("transfer", parent, "--hardware", TARGET, "--samples", "50", "--strategy",
                     strategy, "--db", db)
    assert result.returncode == 0, result.stderr[-3000:]
    with Store(db, read_only=True) as store:
        child = store.query("SELECT kind, train_rows, metrics_json, split_json, path FROM models "
                            "WHERE parent_model_id = ? ORDER BY created_at DESC LIMIT 1",
                            [parent])[0]
        run = store.scalar("SELECT status FROM runs WHERE flow = 'transfer' ORDER BY "
                           "started_at DESC LIMIT 1")
    kind, rows, metrics, split, path = child
    assert rows == 50 and run == "completed"
    assert kind == ("residual" if strategy == "residual" else "mlp")
    assert 0 < json.loads(metrics)["peak1"] <= 1
    lineage = json.loads(open(f"{path}/model.json").read())["lineage"]
    assert lineage["parent_model_id"] == parent and lineage["strategy"] == strategy


BAD_REQUESTS = [
    (["nope"], "no model 'nope'"),
    (["{parent}", "--strategy", "head", "--samples", "999999"], "asked for 999999 target samples"),
    (["{parent}", "--hardware", "tpu-v9"], "hardware tpu-v9 has no data"),
    (["{parent}", "--strategy", "distill"], "invalid choice: 'distill'"),
]


@pytest.fixture(scope="module")
def refused(pretrained):
    """The whole table through the CLI's main() in one process (tests/conftest.py)."""
    db, parent = pretrained
    return run_cli_table([["transfer", *[a.format(parent=parent) for a in args],
                           "--hardware" if "--hardware" not in args else "--seed",
                           TARGET if "--hardware" not in args else "0", "--db", db]
                          for args, _ in BAD_REQUESTS])


@pytest.mark.parametrize("args, message", BAD_REQUESTS)
def test_bad_transfer_requests(refused, args, message):
    assert_refused(refused[BAD_REQUESTS.index((args, message))], message)


def test_multi_head_needs_a_multi_head_parent(pretrained, tmp_path):
    db, _ = pretrained
    result = run_cli("pretrain", "--hardware", SOURCE, "--params", '{"epochs": 1}', "--db", db)
    assert result.returncode == 0, result.stderr[-2000:]
    with Store(db, read_only=True) as store:
        single = store.scalar("SELECT model_id FROM models WHERE NOT config_json LIKE "
                              "'%\"head_per_hardware\": true%' ORDER BY created_at DESC LIMIT 1")
    result = run_cli("transfer", single, "--hardware", TARGET, "--strategy", "multi_head",
                     "--db", db)
    assert result.returncode == 2 and "needs a parent pre-trained with head_per_hardware" in \
        result.stderr
