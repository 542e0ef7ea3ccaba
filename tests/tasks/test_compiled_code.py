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
