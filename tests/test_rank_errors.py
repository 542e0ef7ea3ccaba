"""bench/rank_errors.py: each held-out task's share of the gap to a network-level top-1 of 1
adds up to the score the evaluation reports, however the model ranks, and a failed pick owns
the whole of its network's gap."""

import numpy as np
import pytest

from bench.rank_errors import by_group, operator, ratio_bucket, task_shares
from models.evaluate import network_topk
from tests.models.synthetic import synthetic_dataset


@pytest.mark.parametrize("seed,tied", [(0, False), (1, False), (2, False), (0, True)])
def test_the_task_shares_add_up_to_the_gap_the_evaluation_reports(seed, tied):
    data = synthetic_dataset(n_groups=12, per_group=16, seed=seed, fail_every=1000)
    scores = np.random.default_rng(seed).normal(size=len(data))
    if tied:  # a tree model's coarse scores: ties at the top, charged their expectation
        scores = np.round(scores)
    rows = task_shares(data, scores)
    top1 = network_topk(data, scores)["mean_network_top1"]
    assert top1 < 1.0  # random scores miss somewhere, so the check below has a gap to add up
    assert sum(r["share"] for r in rows) == pytest.approx(1.0 - top1, abs=1e-9)
    assert all(r["share"] >= 0 and r["ratio"] >= 1 for r in rows)
    assert {r["network"] for r in rows} == {"net0", "net1", "net2"}


def test_ranking_by_latency_leaves_no_gap_and_every_pick_is_the_best():
    data = synthetic_dataset(n_groups=9, per_group=10, fail_every=1000)
    rows = task_shares(data, -data.latency)
    assert rows and all(r["share"] == 0 and r["ratio"] == 1 and r["rank"] == 0 for r in rows)


def test_a_failed_pick_owns_its_network_gap():
    data = synthetic_dataset(n_groups=6, per_group=8, fail_every=1000)
    data.latency[0] = np.inf  # the first candidate of w0 (net0 on hw-a) fails...
    scores = -np.nan_to_num(data.latency, posinf=0.0)
    scores[0] = 1e9  # ...and is ranked first
    rows = task_shares(data, scores)
    report = network_topk(data, scores)
    assert sum(r["share"] for r in rows) == pytest.approx(1 - report["mean_network_top1"])
    mine = [r for r in rows if r["network"] == "net0" and r["hardware"] == "hw-a"]
    owner = [r for r in mine if r["workload"] == "w0"]
    assert report["per_hardware"]["hw-a"]["networks"]["net0"]["top1"] == 0.0
    assert owner[0]["share"] > 0 and all(r["share"] == 0 for r in mine if r is not owner[0])


def test_groupings_name_the_operator_and_the_pick_ratio():
    assert operator("fused_conv2d7_subtract5_add10") == "conv2d"
    assert operator("fused_matmul12_add3") == "matmul"
    assert operator("softmax") == "softmax"
    assert [ratio_bucket(r) for r in (1.0, 1.2, 1.7, 3.0, 9.0)] == [
        "< 1.1x", "1.1-1.5x", "1.5-2x", "2-4x", ">= 4x"]
    rows = [{"ratio": 1.0, "share": 0.0, "operator": "conv2d"},
            {"ratio": 3.0, "share": 0.2, "operator": "conv2d"},
            {"ratio": 5.0, "share": 0.1, "operator": "matmul"}]
    assert by_group(rows, "ratio") == {"< 1.1x": 0.0, "2-4x": 0.2, ">= 4x": 0.1}
    assert by_group(rows, "operator") == {"conv2d": 0.2, "matmul": 0.1}
