"""tasks/compiled_code.py: stored candidates rebuilt for their assembly (real builds), the cache."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from core.errors import TenforgeError
from models.asm_features import ASM_NAMES, asm_vector
from tests.conftest import SMALL_SEED_PROFILE


def _conv_candidates(db: str, n: int) -> list[int]:
    """`n` stored candidates of one convolution task of the seed's smallest profile, the same
    ones whatever ids the store gave them."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        return [c for (c,) in store.query(
            "SELECT c.candidate_id FROM candidates c JOIN tasks t USING (task_id) JOIN hardware "
            "h USING (hardware_id) WHERE h.name = ? AND t.task_name LIKE 'fused_conv2d%' AND "
            "t.workload_hash = (SELECT min(t2.workload_hash) FROM candidates c2 JOIN tasks t2 "
            "USING (task_id) WHERE c2.hardware_id = h.hardware_id AND t2.task_name LIKE "
            "'fused_conv2d%') ORDER BY c.schedule_hash LIMIT ?", [SMALL_SEED_PROFILE, n])]


@pytest.mark.slow
def test_a_stored_convolution_rebuilds_to_vector_fmas_and_the_cache_resumes(
        seed_store, tmp_path, monkeypatch):
    from storage import queries
    from tasks.compiled_code import asm_features

    ids = _conv_candidates(seed_store, 3)
    assert len(ids) == 3
    cache = tmp_path / "asm.npz"
    lines: list[str] = []
    first = asm_features(seed_store, ids[::-1], processes=1, cache=cache, progress=lines.append)
    assert first.shape == (3, len(ASM_NAMES)) and not np.isnan(first).any()
    # a sampled schedule may leave the convolution scalar, never without FMAs
    fmas = first[:, [ASM_NAMES.index(f"kernel_fma_{w}")
                     for w in ("zmm", "ymm", "xmm", "scalar")]]
    assert (fmas.sum(1) > 0).all(), "a convolution's kernel loop is its FMAs"
    assert "0 failed" in lines[-1]

    # every row is in the cache now: nothing is read from the store or built again
    monkeypatch.setattr(queries, "candidate_programs", lambda *_: pytest.fail("rebuilt"))
    again = asm_features(seed_store, ids, processes=1, cache=cache)
    assert np.array_equal(again, first[::-1])


def test_a_cache_of_another_store_is_refused(tmp_path):
    from tasks.compiled_code import _save_cache, asm_features

    cache = tmp_path / "asm.npz"
    text = ("\t.type\tf_compute_,@function\nf_compute_:\n"
            "\tvfmadd231ps\t%zmm1, %zmm2, %zmm0\n\tretq\n")
    _save_cache(cache, str(tmp_path / "one.duckdb"), {7: zlib.compress(text.encode()),
                                                       9: zlib.compress(b"")}, {11})
    with pytest.raises(TenforgeError, match="candidate ids are store-local"):
        asm_features(str(tmp_path / "other.duckdb"), [7], cache=cache)
    # ...and the one it belongs to answers from its text without a store
    # (a failed build, 11, is remembered: NaN, and no store opened to try it again)
    got = asm_features(str(tmp_path / "one.duckdb"), [9, 7, 11], cache=cache)
    assert np.array_equal(got[:2], np.stack([asm_vector(""), asm_vector(text)]))
    assert got[1, ASM_NAMES.index("kernel_fma_zmm")] == 1  # log2(1 + 1)
    assert np.isnan(got[2]).all()


@pytest.mark.slow
def test_dataset_asm_stores_the_columns_a_dataset_loads_and_resumes(tmp_path):
    from models.dataset import DataSpec, load_dataset
    from storage.feature_rows import ASM_EXTRACTOR
    from storage.seed import load_shards
    from storage.store import Store
    from tasks.compiled_code import asm_features
    from tenforge.cli import main

    db = str(tmp_path / "small.duckdb")
    load_shards(db, hardware=[SMALL_SEED_PROFILE], progress=lambda _: None)
    args = ["dataset", "asm", "--db", db, "--hardware", SMALL_SEED_PROFILE, "--limit", "3",
            "--processes", "1"]
    assert main(args) == 0
    assert main(args) == 0  # the next three: what has its columns is not built again

    def stored() -> dict[int, np.ndarray]:
        with Store(db, read_only=True) as store:
            return {c: np.array(v, np.float32) for c, v in store.query(
                "SELECT candidate_id, \"values\" FROM features WHERE extractor = ?",
                [ASM_EXTRACTOR])}

    rows = stored()
    assert len(rows) == 6
    ids = sorted(rows)
    # the same columns as the study path's (bench/asm_features.py), from the same builds
    np.testing.assert_array_equal(np.stack([rows[c] for c in ids]),
                                  asm_features(db, ids, processes=1))
    data = load_dataset(db, DataSpec(hardware=(SMALL_SEED_PROFILE,), asm=True))
    has = ~np.isnan(data.asm).all(1)
    assert sorted(data.candidate_id[has].tolist()) == [c for c in ids if c in
                                                       set(data.candidate_id.tolist())]
    assert np.isnan(data.asm[~has]).all()


def test_dataset_asm_refuses_a_store_or_profile_it_cannot_read(tmp_path, seed_store):
    from tasks.compiled_code import store_asm_features

    with pytest.raises(TenforgeError, match="does not exist; collect into it first"):
        store_asm_features(str(tmp_path / "none.duckdb"), SMALL_SEED_PROFILE)
    with pytest.raises(TenforgeError, match="read x86 code; gpu-h100 is cuda/sm_90a"):
        store_asm_features(seed_store, "gpu-h100")
    with pytest.raises(TenforgeError, match="cpu-nowhere-1t is not in"):
        store_asm_features(seed_store, "cpu-nowhere-1t")


def test_a_candidate_whose_measured_build_timed_out_is_not_built_again(db, monkeypatch):
    import tasks.compiled_code as compiled_code
    from storage.feature_rows import ASM_EXTRACTOR, feature_matrix
    from storage.store import Store
    from tests.storage.test_store import C, R, _seed

    with Store(db) as store:
        hid, tid, sid = _seed(store)
        store.insert_candidates(tid, hid, [C("h0", features=np.ones((1, 164), np.float32))],
                                extractor="per_store_feature_v1")
        [pending] = store.pending_candidates(hid, sid)
        store.insert_measurements(sid, [R(pending["candidate_id"], run_secs=(),
                                          error_kind="build_timeout", error_msg="60 s",
                                          verified=None)], "0.27", "run-1")
        name = store.scalar("SELECT name FROM hardware")
    built: list = []
    monkeypatch.setattr(compiled_code, "_built", lambda programs, _: built.extend(programs) or [])
    counts = compiled_code.store_asm_features(db, name)
    assert built == [] and counts == {"wanted": 1, "stored": 1, "failed": 1}
    with Store(db, read_only=True) as store:
        assert np.isnan(feature_matrix(store, [pending["candidate_id"]], ASM_EXTRACTOR,
                                       len(ASM_NAMES))).all()
    assert np.isnan(compiled_code.asm_features(db, [pending["candidate_id"]])).all()
    assert built == []
