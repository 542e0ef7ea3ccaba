"""The trace summary (models/trace_features.py): what it reads from a real MetaSchedule trace,
tree models that take it beside the per-store rows, and the tuning-time path that feeds it."""

import json

import numpy as np
import pytest

from core.errors import TenforgeError
from models.dataset import DataSpec, dataset_from_features, load_dataset
from models.registry import create_model
from models.trace_features import (
    DIM,
    FACTORS,
    HARDWARE_TILE_NAMES,
    PRIMITIVES,
    SUMMARY_DIM,
    TILE_NAMES,
    input_width,
    tile_hardware_columns,
    trace_vector,
)
from tests.conftest import SEED_PROFILE


@pytest.fixture(scope="module")
def traced(seed_store):
    """The seed's tiny_cnn and mlp rows on one profile, with their traces."""
    return load_dataset(seed_store, DataSpec(hardware=(SEED_PROFILE,),
                                             networks=("tiny_cnn", "mlp"), traces=True))


def test_the_summary_counts_primitives_and_reads_the_decisions():
    insts = [["GetSBlock", [], ["C", "main"], ["b0"]],
             ["GetLoops", ["b0"], [], ["l1", "l2"]],
             ["SamplePerfectTile", ["l1"], [4, 64], ["v3", "v4", "v5", "v6"]],
             ["Split", ["l1", "v3", "v4", "v5", "v6"], [True, False], ["a", "b", "c", "d"]],
             ["SampleCategorical", [], [[0, 16, 64, 512], [0.25] * 4], ["v7"]],
             ["SampleComputeLocation", ["b0"], [], ["l8"]],
             ["EnterPostproc", [], [], []],
             ["Parallel", ["x"], [], []]]  # a postprocessor's: counted, the marker not
    vector = trace_vector(json.dumps([insts, [[2, [1, 2, 8, 4]], [4, 2], [5, -1]]]))
    assert vector.shape == (DIM,) and vector.dtype == np.float32
    assert vector[PRIMITIVES.index("Split")] == pytest.approx(np.log1p(1))
    assert vector[PRIMITIVES.index("Parallel")] == pytest.approx(np.log1p(1))
    # the same schedule without the marker (how sampled traces were stored) summarizes the same
    unmarked = [inst for inst in insts if inst[0] != "EnterPostproc"]
    assert np.array_equal(trace_vector(json.dumps([unmarked, [[2, [1, 2, 8, 4]], [4, 2],
                                                              [5, -1]]])), vector)
    tiles = len(PRIMITIVES)
    assert list(vector[tiles:tiles + FACTORS]) == [0, 1, 3, 2]  # log2 of 1, 2, 8, 4
    categorical = tiles + 8 * FACTORS
    assert vector[categorical] == pytest.approx(np.log2(65))  # the value chosen: 64
    assert vector[categorical + 4] == -1  # computed at the root


def _tiled_trace(*tiles: list[int]) -> str:
    """A trace of one SamplePerfectTile (and Split) per tile decision, in order."""
    insts, decisions = [], []
    for n, factors in enumerate(tiles):
        decisions.append([len(insts), factors])
        insts.append(["SamplePerfectTile", [f"l{n}"], [len(factors), 64],
                      [f"v{n}_{i}" for i in range(len(factors))]])
        insts.append(["Split", [f"l{n}"], [True, False], [f"s{n}_{i}" for i in
                                                          range(len(factors))]])
    return json.dumps([insts, decisions])


def test_the_tile_block_sums_the_levels_of_every_spatial_and_reduction_loop():
    # SSRSRS: two spatial loops (4 levels each), one reduction loop (2 levels)
    vector = trace_vector(_tiled_trace([1, 2, 1, 4], [2, 1, 2, 16], [8, 4]))
    block = dict(zip(TILE_NAMES, vector[SUMMARY_DIM:]))
    assert vector.shape == (DIM,)
    assert [block[f"spatial_level{i}"] for i in range(4)] == [1, 1, 1, 6]  # log2 2, 2, 2, 64
    assert [block["reduction_level0"], block["reduction_level1"]] == [3, 2]
    assert block["vector_loop"] == 4 and block["register_tile_rest"] == 2  # 16 lanes; 4 rows
    assert block["cache_tile"] == 1 + 6 + 2 and block["inner_kernel"] == 6 + 2
    assert (block["inner_tiled_loops"], block["spatial_tiles"], block["reduction_tiles"]) == \
        (2, 2, 1)
    # the summary's own columns read only the first FACTORS of each tile, as before
    assert list(vector[len(PRIMITIVES):len(PRIMITIVES) + FACTORS]) == [0, 1, 0, 2]


def test_the_tile_hardware_columns_weigh_the_register_tile_against_the_target():
    from core.hardware import HARDWARE_FEATURE_NAMES

    row = trace_vector(_tiled_trace([1, 1, 1, 4], [1, 1, 1, 16]))[None, :]  # 4 x 16 floats

    def hardware(vector_bytes, avx512):
        vector = np.zeros((1, len(HARDWARE_FEATURE_NAMES)), np.float32)
        vector[0, HARDWARE_FEATURE_NAMES.index("vector_unit_bytes")] = vector_bytes
        vector[0, HARDWARE_FEATURE_NAMES.index("has_avx512f")] = avx512
        return vector

    avx512 = dict(zip(HARDWARE_TILE_NAMES, tile_hardware_columns(row, hardware(64, 1))[0]))
    avx2 = dict(zip(HARDWARE_TILE_NAMES, tile_hardware_columns(row, hardware(32, 0))[0]))
    # AVX-512: 16 lanes, the 16-wide loop is one vector, 4 accumulators of 32 registers
    assert (avx512["vector_loop_over_lanes"], avx512["accumulator_vectors"],
            avx512["accumulators_over_registers"]) == (0, 2, -3)
    # AVX2: 8 lanes, two vectors per row, 8 accumulators of 16 registers
    assert (avx2["vector_loop_over_lanes"], avx2["accumulator_vectors"],
            avx2["accumulators_over_registers"]) == (1, 3, -1)


@pytest.mark.parametrize("family", ["xgb", "lgbm"])
def test_trees_take_the_tile_block_with_or_without_the_summary(traced, family):
    from models._trees import config_inputs

    for trace_features in (False, True):
        model = create_model(family, trace_features=trace_features, tile_features=True,
                             n_estimators=20, seed=0)
        assert model.takes_traces
        model.fit(traced)
        plain = config_inputs(traced, create_model(family).config)
        assert config_inputs(traced, model.config).shape[1] == \
            plain.shape[1] + input_width(trace_features, True)
        assert np.isfinite(model.predict(traced)).all()


def test_stored_traces_load_with_the_data(traced):
    assert traced.trace is not None and traced.trace.shape == (len(traced), DIM)
    assert traced.trace[:, :len(PRIMITIVES)].sum(axis=1).min() > 0  # every trace has primitives
    part = traced.subset(np.arange(0, len(traced), 3))
    assert np.array_equal(part.trace, traced.trace[::3])


@pytest.mark.parametrize("family", ["xgb", "lgbm"])
def test_trees_take_the_trace_beside_the_per_store_rows(traced, family):
    model = create_model(family, trace_features=True, n_estimators=20, seed=0)
    model.fit(traced)
    assert model.takes_traces
    scores = model.predict(traced)
    assert np.isfinite(scores).all() and np.unique(scores).size > 1
    plain = traced.subset(np.arange(len(traced)))
    object.__setattr__(plain, "trace", None)
    with pytest.raises(TenforgeError, match="DataSpec\\(traces=True\\)"):
        model.predict(plain)


def test_the_tuning_adapter_feeds_traces_to_a_model_that_takes_them(traced, seed_store):
    from models.ms_adapter import LearnedCostModel
    from storage.store import Store

    model = create_model("xgb", trace_features=True, n_estimators=20, seed=0)
    model.fit(traced)
    with Store(seed_store, read_only=True) as store:
        traces = dict(store.query("SELECT candidate_id, trace_json FROM candidates WHERE "
                                  "candidate_id IN (SELECT unnest(?))",
                                  [traced.candidate_id[:8].tolist()]))
    rows = [traced.candidate_features(i) for i in range(8)]
    logic = LearnedCostModel(model, SEED_PROFILE, traced.hardware_features[0])
    got = logic.predict(rows, [traces[int(c)] for c in traced.candidate_id[:8]])
    assert np.allclose(got, model.predict(traced.subset(np.arange(8))), atol=1e-5)
    same = dataset_from_features(rows, SEED_PROFILE, traced.hardware_features[0],
                                 traces=[traces[int(c)] for c in traced.candidate_id[:8]])
    assert np.allclose(same.trace, traced.trace[:8])


@pytest.mark.parametrize("strategy", ["full", "residual"])
def test_a_parent_that_takes_traces_transfers(traced, seed_store, tmp_path, strategy):
    """Its inputs are per-store sums, hardware features, then the trace summary: the check of
    the hardware vector's length must not count the trace (the pipeline's onboard did)."""
    from models.transfer import check_transferable, fine_tune

    parent = create_model("xgb", trace_features=True, n_estimators=20, seed=0)
    parent.fit(traced)
    parent.save(tmp_path / "parent")
    target = load_dataset(seed_store, DataSpec(hardware=("cpu-znver3-sse42-1t",),  # another
                                               networks=("tiny_cnn",), traces=True))
    check_transferable(parent, target)
    child, _ = fine_tune(tmp_path / "parent", strategy, target, seed=0)
    assert child.takes_traces and np.isfinite(child.predict(target)).all()


def test_the_tuning_adapter_reads_the_same_summary_from_the_trace_object():
    """The search ranks thousands of schedules: the adapter summarizes each Trace in place
    instead of converting it to JSON; the vector must be the stored trace JSON's."""
    from core.tvm_env import load_tvm
    from models.ms_adapter import trace_summary
    from tasks.sampling import sample_candidates
    from tasks.workloads import extract_network_tasks
    from tests.conftest import LOCAL_TARGET

    tvm = load_tvm(LOCAL_TARGET)
    from tvm import s_tir

    conv = next(t for t in extract_network_tasks("tiny_cnn", 1, None, LOCAL_TARGET)
                if "conv2d" in t.task_name)
    candidates, _ = sample_candidates(conv.mod_json, LOCAL_TARGET, 6, seed=0)
    for candidate in candidates:
        sch = s_tir.Schedule(tvm.ir.load_json(conv.mod_json))
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(candidate.trace_json), sch)
        expected = trace_vector(candidate.trace_json)
        assert np.array_equal(trace_summary(sch.trace), expected)
        assert expected[len(PRIMITIVES):].any()  # decisions were read, not only counts
