"""A learned search's picks kept mixed over a task's innermost tile factor (models/tile_mix.py):
the groups, the lift, and the adapter's counting, on doubles (a real search: test_ms_adapter)."""

from collections import Counter
from types import SimpleNamespace

import numpy as np
import pytest

from core.errors import TenforgeError
from models.ms_adapter import LearnedCostModel
from models.registry import create_model
from models.tile_mix import group_bests, innermost_group, json_group, lifted, steered, trace_group
from tasks.tuning.checks import check_tile_mix
from tests.models.synthetic import synthetic_dataset


def test_the_group_is_the_innermost_factor_of_the_last_spatial_tile():
    # a blocked convolution: five spatial loops in 4 levels, then reductions in 2
    tiles = [[1, 1, 1, 1], [2, 1, 3, 1], [7, 2, 8, 1], [14, 1, 4, 2], [1, 2, 1, 8],
             [1, 16], [1, 1], [1, 1]]
    assert innermost_group(tiles) == 8
    assert innermost_group([[4, 16]]) == 16
    assert innermost_group([]) is None


def test_trace_group_reads_a_traces_tile_decisions_in_instruction_order():
    class Trace:  # a MetaSchedule Trace's two members the group reads
        def __init__(self, steps):
            self.insts = [SimpleNamespace(kind=SimpleNamespace(name=kind)) for kind, _ in steps]
            self.decided = {id(inst): value for inst, (_, value) in zip(self.insts, steps)}

        def get_decision(self, inst):
            return self.decided[id(inst)]

    steps = [("GetLoops", None), ("SamplePerfectTile", [1, 2, 2, 4]), ("SampleCategorical", 3),
             ("SamplePerfectTile", [2, 1, 1, 16]), ("SamplePerfectTile", [8, 2])]
    assert trace_group(Trace(steps)) == 16
    assert trace_group(Trace([("SampleCategorical", 1)])) is None
    # the stored JSON form: [instructions, decisions], decisions in any order
    stored = [[[kind, [], [], []] for kind, _ in steps],
              [[4, [8, 2]], [1, [1, 2, 2, 4]], [2, 3], [3, [2, 1, 1, 16]]]]
    assert json_group(stored) == 16


def test_other_groups_are_lifted_to_tie_the_dominant_groups_best():
    scores = np.array([0.98, 0.95, 0.90, 0.85, 0.10, 0.5])
    groups = [16, 16, 8, 8, 1, None]
    out = lifted(scores, groups, Counter(), share=0.25)  # nothing measured: the top's group
    np.testing.assert_allclose(out, [0.98, 0.95, 0.98, 0.93, 0.18, 0.5])
    # within a group the order stands; programs without a group are not lifted
    assert out[2] > out[3] and out[5] == scores[5]
    # the same while the task measured too few outside its dominant group
    np.testing.assert_allclose(lifted(scores, groups, Counter({16: 10, 8: 2}), 0.25), out)


def test_no_lift_once_the_share_is_met_or_with_one_group():
    scores = np.array([0.98, 0.95, 0.90])
    groups = [16, 16, 8]
    np.testing.assert_array_equal(lifted(scores, groups, Counter({16: 6, 8: 2}), 0.25), scores)
    np.testing.assert_array_equal(lifted(scores, [16, 16, 16], Counter(), 0.25), scores)
    # the dominant group is the one measured most, not the best scored: 16 is lifted here
    np.testing.assert_allclose(lifted(np.array([0.8, 0.7, 0.9]), groups,
                                      Counter({8: 9, 16: 1}), 0.25), [0.9, 0.8, 0.9])
    assert lifted(np.zeros(0), [], Counter(), 0.25).shape == (0,)


def _adapters(**mixing):
    """12 candidates' features and tile groups (6 of 16, 6 of 8), an adapter without a mix and
    one with `mixing`, and the plain adapter's scores."""
    data = synthetic_dataset()
    model = create_model("xgb", n_estimators=20, loss="rank")
    model.fit(data)
    feats = [data.candidate_features(i) for i in range(12)]
    groups = [16] * 6 + [8] * 6
    plain = LearnedCostModel(model, "hw-a", data.hardware_features[0])
    mixed = LearnedCostModel(model, "hw-a", data.hardware_features[0], **mixing)
    return data, feats, groups, plain, mixed, plain.search_scores(feats, task="t", groups=groups)


def test_the_adapter_counts_each_tasks_groups_and_lifts_its_scores():
    data, feats, groups, plain, mixed, base = _adapters(mix=0.25)
    assert np.array_equal(base, plain.search_scores(feats))  # no mix: groups change nothing
    dominant = groups[int(np.argmax(base))]
    np.testing.assert_allclose(mixed.search_scores(feats, task="t", groups=groups),
                               lifted(base, groups, Counter(), 0.25))
    mixed.update("t", feats[:4], list(data.latency[:4]), groups=[dominant] * 4)
    assert mixed.groups_seen == {"t": Counter({dominant: 4})}
    mixed.update("t", feats[4:6], list(data.latency[4:6]), groups=[99, 99])  # 2 of 6 outside
    np.testing.assert_array_equal(mixed.search_scores(feats, task="t", groups=groups), base)


def test_group_bests_keep_each_groups_fastest_valid_program():
    bests = group_bests([16, 8, 16, None, 4], [3.0, 2.0, 1.5, 0.1, np.inf])
    assert bests == {16: 1.5, 8: 2.0}  # a failure and a program without a group count not
    assert group_bests([8, 4], [2.5, 9.0], bests) == {16: 1.5, 8: 2.0, 4: 9.0}
    assert bests == {16: 1.5, 8: 2.0}  # the earlier map is left as it was


def test_steering_lifts_the_group_that_measured_fastest():
    scores = np.array([0.98, 0.95, 0.60, 0.55, 0.10])
    groups = [8, 8, 16, 16, 4]
    # the model prefers 8; 16 measured fastest and the quota is met: 16 alone is lifted
    out = steered(scores, groups, Counter({8: 6, 16: 3}), {8: 3.1, 16: 2.2}, share=0.25)
    np.testing.assert_allclose(out, [0.98, 0.95, 0.98, 0.93, 0.10])
    # the leader the model prefers already, the quota met: the model's order stands
    np.testing.assert_array_equal(
        steered(scores, groups, Counter({8: 6, 16: 3}), {8: 2.0, 16: 2.2}, 0.25), scores)


def test_steering_spends_the_quota_on_unprobed_groups_then_the_runner_up():
    scores = np.array([0.98, 0.90, 0.70, 0.40, 0.20, 0.05])
    groups = [8, 4, 4, 16, 2, 1]
    # nothing measured: the model's top group leads; two unprobed groups, its best first
    out = steered(scores, groups, Counter(), {}, share=0.25, probes=2)
    np.testing.assert_allclose(out, [0.98, 0.98, 0.78, 0.98, 0.20, 0.05])
    # 4 and 16 probed, 4 faster: the quota goes to 4 (the runner-up) and the next unprobed, 2
    measured, bests = Counter({8: 20, 4: 1, 16: 1}), {8: 1.0, 4: 3.0, 16: 5.0}
    out = steered(scores, groups, measured, bests, 0.25, probes=1)
    np.testing.assert_allclose(out, [0.98, 0.98, 0.78, 0.40, 0.98, 0.05])
    # every group probed: the runner-up alone, even one the model scores low
    everyone = Counter({8: 20, 4: 1, 16: 1, 2: 1, 1: 1})
    out = steered(scores, groups, everyone, {8: 1.0, 4: 3.0, 16: 5.0, 2: 9.0, 1: 2.0}, 0.25)
    np.testing.assert_allclose(out, [0.98, 0.90, 0.70, 0.40, 0.20, 0.98])
    # the quota met: the leader alone (already the top here)
    met = Counter({8: 6, 4: 1, 16: 1, 2: 1, 1: 1})
    np.testing.assert_array_equal(steered(scores, groups, met, bests, 0.25), scores)


def test_steering_leaves_one_group_or_none_alone():
    scores = np.array([0.9, 0.5, 0.7])
    np.testing.assert_array_equal(steered(scores, [16, 16, None], Counter(), {}, 0.25), scores)
    np.testing.assert_array_equal(steered(scores, [None] * 3, Counter(), {}, 0.25), scores)
    assert steered(np.zeros(0), [], Counter(), {}, 0.25).shape == (0,)
    # a leader the candidates lack is not lifted; the others compete as usual
    out = steered(scores, [16, 8, 8], Counter({32: 9}), {32: 1.0}, 0.25)
    np.testing.assert_allclose(out, [0.9, 0.7, 0.9])  # 8 unprobed, lifted; 16 unprobed, top


def test_the_adapter_steers_by_each_tasks_fastest_groups():
    _, feats, groups, _, steering, base = _adapters(mix=0.25, steer=True)
    steering.update("t", feats[:4], [2.0, 1.0, np.inf, 3.0], groups=[16, 8, 8, 16])
    assert steering.group_bests == {"t": {16: 2.0, 8: 1.0}}
    np.testing.assert_allclose(steering.search_scores(feats, task="t", groups=groups),
                               steered(base, groups, Counter({16: 2, 8: 2}), {16: 2.0, 8: 1.0},
                                       0.25))


def test_a_tile_mix_is_refused_where_it_cannot_act():
    check_tile_mix(None, "xgb", "gradient")
    check_tile_mix(0.25, "data/models/m", "gradient")
    for share in (0, 1, 1.5):
        with pytest.raises(TenforgeError, match=r"in \(0, 1\)"):
            check_tile_mix(share, "data/models/m", "gradient")
    for model, scheduler in (("xgb", "gradient"), ("data/models/m", "instant")):
        with pytest.raises(TenforgeError, match="learned model's picks in a search"):
            check_tile_mix(0.25, model, scheduler)
    with pytest.raises(TenforgeError, match="directs a tile mix's quota"):
        check_tile_mix(None, "data/models/m", "gradient", steer=True)
    check_tile_mix(0.25, "data/models/m", "gradient", steer=True)
