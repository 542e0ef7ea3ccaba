"""storage/feature_rows.py: feature rows added after measuring (the assembly columns), how a
dataset loads them, and that shards leave them out."""

import json

import numpy as np
import pytest

from core.errors import TenforgeError
from models.asm_features import ASM_DIM
from models.dataset import DataSpec, load_dataset
from storage.feature_rows import (
    ASM_EXTRACTOR,
    add_feature_rows,
    feature_matrix,
    unfeatured_candidates,
)
from storage.store import Store
from tests.storage.test_store import C, R, _seed

PER_STORE = "per_store_feature_v1"


def _measured_store(db: str) -> tuple[str, list[int]]:
    """(profile name, candidate ids): four candidates of one task, three of them measured."""
    with Store(db) as store:
        hid, tid, sid = _seed(store)
        cands = [C(f"h{i}", features=np.full((1, 164), i, np.float32)) for i in range(4)]
        store.insert_candidates(tid, hid, cands, extractor=PER_STORE)
        ids = [p["candidate_id"] for p in store.pending_candidates(hid, sid)]
        store.insert_measurements(sid, [R(ids[0]), R(ids[1], run_secs=(2e-3,)),
                                        R(ids[2], run_secs=(4e-3,))], "0.27", "run-1")
        name = store.scalar("SELECT name FROM hardware WHERE hardware_id = ?", [hid])
        store.con.execute("INSERT INTO runs (run_id, flow, parameters_json, hardware, host, "
                          "tvm_version, tenforge_version, started_at, finished_at, status) "
                          "VALUES ('run-1', 'collect', ?, ?, 'h', '0.27', '0', now(), now(), "
                          "'completed')", [json.dumps({
                              "hardware": name, "networks": ["net"], "candidates_per_task": 4,
                              "seed": 0, "batch_size": 1}), name])
    return name, ids


def test_rows_are_added_once_read_in_order_and_missing_ones_are_nan(db):
    name, ids = _measured_store(db)
    with Store(db) as store:
        # only measured candidates want columns: ids[3] was never measured
        assert unfeatured_candidates(store, name, ASM_EXTRACTOR) == ids[:3]
        rows = np.arange(2 * ASM_DIM, dtype=np.float32).reshape(2, ASM_DIM)
        assert add_feature_rows(store, ids[:2], ASM_EXTRACTOR, rows) == 2
        assert add_feature_rows(store, ids[:2], ASM_EXTRACTOR, rows + 1) == 0  # kept, not doubled
        assert unfeatured_candidates(store, name, ASM_EXTRACTOR) == [ids[2]]
        got = feature_matrix(store, [ids[2], ids[1], ids[0]], ASM_EXTRACTOR, ASM_DIM)
        assert np.isnan(got[0]).all()
        np.testing.assert_array_equal(got[1:], rows[::-1])
        # columns of another width (an older version of the extractor) read as missing
        assert np.isnan(feature_matrix(store, ids[:1], ASM_EXTRACTOR, ASM_DIM + 1)).all()
        with pytest.raises(ValueError, match=r"shape \[3, dim\]"):
            add_feature_rows(store, ids[:3], ASM_EXTRACTOR, rows)


def test_a_dataset_asks_for_the_asm_columns_by_name_and_is_refused_without_any(db):
    name, ids = _measured_store(db)
    spec = DataSpec(hardware=(name,), extractor=PER_STORE, asm=True)
    with pytest.raises(TenforgeError, match=f"tenforge dataset asm --db {db} --hardware {name}"):
        load_dataset(db, spec)
    with Store(db) as store:
        add_feature_rows(store, [ids[1]], ASM_EXTRACTOR, np.full((1, ASM_DIM), 7, np.float32))
    data = load_dataset(db, spec)
    by_id = dict(zip(data.candidate_id.tolist(), data.asm))
    assert (by_id[ids[1]] == 7).all() and np.isnan(by_id[ids[0]]).all()
    assert data.subset(np.array([0])).asm.shape == (1, ASM_DIM)
    plain = load_dataset(db, DataSpec(hardware=(name,), extractor=PER_STORE))
    assert plain.asm is None
    # the columns attached afterwards (the gate, the leaderboard): the same data and spec
    from models.dataset import with_stored_asm

    attached = with_stored_asm(db, plain)
    assert attached.fingerprint() == data.fingerprint()
    np.testing.assert_array_equal(attached.asm, data.asm)
    # the spec without them is the spec of the data before them: fingerprints do not move
    assert "asm" not in plain.spec.to_json() and spec.to_json()["asm"] is True
    assert DataSpec.from_json(spec.to_json()) == spec


def test_shards_leave_the_derived_rows_out(db, tmp_path):
    from storage.seed import load_shards
    from storage.seed_export import export_shards

    name, ids = _measured_store(db)
    with Store(db) as store:
        add_feature_rows(store, ids[:3], ASM_EXTRACTOR, np.ones((3, ASM_DIM), np.float32))
    written = export_shards(db, str(tmp_path / "shards"))
    assert [s.measured for s in written] == [3]  # one row per measurement, not per feature row
    manifest = json.loads(next((tmp_path / "shards").rglob("*.json")).read_text())
    assert manifest["measured"] == 3
    other = str(tmp_path / "other.duckdb")
    load_shards(other, str(tmp_path / "shards"), progress=lambda _: None)
    with Store(other, read_only=True) as store:
        assert store.query("SELECT extractor, count(*) FROM features GROUP BY 1") == [
            (PER_STORE, 3)]


def test_a_model_of_the_asm_columns_is_never_the_one_a_search_tunes_with(db):
    from storage.queries import best_model_id

    name, _ = _measured_store(db)
    with Store(db) as store:
        for model_id, asm, peak1 in (("plain", False, 0.5), ("asm", True, 0.9)):
            spec = DataSpec(hardware=(name,), asm=asm).to_json()
            store.register_model({"model_id": model_id, "kind": "lgbm", "path": "-",
                                  "config_json": "{}", "data_spec_json": json.dumps(spec),
                                  "data_fingerprint": "f",
                                  "metrics_json": json.dumps({"peak1": peak1})})
        # the better held-out score is the asm model's; retune's search cannot rank with it
        assert best_model_id(store, name, PER_STORE) == "plain"
