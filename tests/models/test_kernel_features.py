"""The micro-kernel estimate (models/kernel_features.py): each factor on register tiles whose
efficiency is known by hand, and tree models that take it."""

import numpy as np
import pytest

from core.errors import TenforgeError
from core.hardware import HARDWARE_FEATURE_NAMES
from models.dataset import DataSpec, load_dataset
from models.kernel_features import KERNEL_NAMES, kernel_columns
from models.registry import create_model
from models.trace_features import DIM, SUMMARY_DIM, TILE_NAMES
from tests.conftest import SEED_PROFILE


def _tile(vector_loop: int, rest: int) -> np.ndarray:
    """One trace row with only the register tile set: the vector loop and the rest, log2."""
    row = np.zeros((1, DIM), np.float32)
    row[0, SUMMARY_DIM + TILE_NAMES.index("vector_loop")] = np.log2(vector_loop)
    row[0, SUMMARY_DIM + TILE_NAMES.index("register_tile_rest")] = np.log2(rest)
    return row


def _hardware(vector_bytes: int, avx512: bool) -> np.ndarray:
    vector = np.zeros((1, len(HARDWARE_FEATURE_NAMES)), np.float32)
    vector[0, HARDWARE_FEATURE_NAMES.index("vector_unit_bytes")] = vector_bytes
    vector[0, HARDWARE_FEATURE_NAMES.index("has_avx512f")] = float(avx512)
    return vector


AVX512, AVX2 = _hardware(64, True), _hardware(32, False)


def _columns(vector_loop: int, rest: int, hardware: np.ndarray) -> dict[str, float]:
    return dict(zip(KERNEL_NAMES, kernel_columns(_tile(vector_loop, rest), hardware)[0]))


def test_a_full_register_tile_scores_its_loads_only():
    # AVX-512: a 16-wide loop is one full vector; 8 rows give 8 accumulators (enough chains,
    # 8 of 30 registers); each step loads 1 vector and broadcasts 8: 8 FMAs for 9 loads
    got = _columns(16, 8, AVX512)
    assert (got["lane_fill"], got["fma_chains"], got["accumulators_fit"]) == (0, 0, 0)
    assert got["fmas_per_load"] == pytest.approx(np.log2(8 / 9))
    assert got["kernel_efficiency"] == pytest.approx(np.log2(8 / 9))


def test_a_scalar_loop_fills_one_lane_and_too_few_chains_stall():
    got = _columns(1, 2, AVX512)  # no vector loop: 1 of 16 lanes, 2 accumulators
    assert got["lane_fill"] == pytest.approx(-4)
    assert got["fma_chains"] == pytest.approx(np.log2(2 / 8))
    assert got["kernel_efficiency"] == pytest.approx(sum(got[n] for n in KERNEL_NAMES[:-1]))


def test_a_ragged_vector_loop_and_a_spilling_tile_are_charged():
    # 10 floats in 16 lanes: one vector, 10/16 of it used
    assert _columns(10, 8, AVX512)["lane_fill"] == pytest.approx(np.log2(10 / 16))
    # 64 accumulators in AVX-512's 30 free registers: 30/64 of them fit
    assert _columns(16, 64, AVX512)["accumulators_fit"] == pytest.approx(np.log2(30 / 64))


def test_the_same_tile_reads_by_the_targets_lanes_and_registers():
    # 16 floats x 8 rows: one vector a row with AVX-512, two with AVX2 (16 accumulators in 14
    # free registers: they spill)
    avx512, avx2 = _columns(16, 8, AVX512), _columns(16, 8, AVX2)
    assert avx512["accumulators_fit"] == 0
    assert avx2["lane_fill"] == 0 and avx2["accumulators_fit"] == pytest.approx(np.log2(14 / 16))
    assert avx2["fmas_per_load"] == 0  # 16 FMAs for 10 loads: capped at 1
    assert (kernel_columns(_tile(16, 8), AVX512) <= 0).all()


def test_trees_take_the_estimate_after_every_other_block(seed_store):
    from models._trees import config_inputs

    data = load_dataset(seed_store, DataSpec(hardware=(SEED_PROFILE,), networks=("tiny_cnn",),
                                             traces=True))
    model = create_model("lgbm", tile_features=True, kernel_features=True, n_estimators=20,
                         seed=0)
    assert model.takes_traces
    model.fit(data)
    inputs = config_inputs(data, model.config)
    without = config_inputs(data, create_model("lgbm", tile_features=True).config)
    assert inputs.shape[1] == without.shape[1] + len(KERNEL_NAMES)
    assert np.array_equal(inputs[:, :without.shape[1]], without)
    assert np.isfinite(model.predict(data)).all()
    plain = data.subset(np.arange(len(data)))
    object.__setattr__(plain, "trace", None)
    with pytest.raises(TenforgeError, match="DataSpec\\(traces=True\\)"):
        model.predict(plain)
