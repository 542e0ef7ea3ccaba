"""The metric functions against hand-computed cases (DESIGN.md section 3)."""

import math

import numpy as np
import pytest

from models.metrics import (
    average_peak_score,
    expected_topk_min,
    network_topk_score,
    pairwise_accuracy,
    peak_score,
    per_task,
    rmse,
    topk_recall,
)

Y = [1.0, 0.5, 0.25, 0.0]   # label = min latency / latency; 0 = failed
P = [0.1, 0.9, 0.5, 0.0]    # predicted order: 1, 2, 0, 3


def test_pairwise_accuracy_counts_agreeing_pairs():
    # pairs (0,1) (0,2) disagree; (0,3) (1,2) (1,3) (2,3) agree
    assert pairwise_accuracy(Y, P) == pytest.approx(4 / 6)
    assert pairwise_accuracy(Y, [0.9, 0.1, 0.5, 0.0]) == pytest.approx(5 / 6)
    assert pairwise_accuracy(Y, Y) == 1.0


def test_peak_score_plain_and_averaged():
    assert peak_score(Y, P, 1) == 0.5
    assert peak_score(Y, P, 2) == 0.5
    assert peak_score(Y, P, 3) == 1.0
    assert average_peak_score(Y, P, 3) == pytest.approx((0.5 + 0.5 + 1.0) / 3)
    assert average_peak_score(Y, P, 10) == pytest.approx((0.5 + 0.5 + 1.0 + 1.0) / 4)


def test_topk_recall_and_rmse():
    assert topk_recall(Y, P, 2) == 0.5          # {1, 2} vs {0, 1}
    assert topk_recall(Y, P, 5) == 4 / 5        # fewer candidates than k
    assert rmse([1.0, 0.0], [0.0, 0.0]) == pytest.approx(math.sqrt(0.5))


def test_ties_at_the_kth_place_are_charged_their_expectation_over_random_orders():
    y, p = [0.2, 1.0, 0.5], [0.3, 0.3, 0.3]
    assert peak_score(y, p, 1) == pytest.approx((0.2 + 1.0 + 0.5) / 3)  # any of the three
    assert peak_score(y, p, 2) == pytest.approx((1.0 + 0.5 + 1.0) / 3)  # pairs {01} {02} {12}
    assert peak_score(y, p, 3) == 1.0
    assert average_peak_score(y, p, 2) == pytest.approx((1.7 / 3 + 2.5 / 3) / 2)
    assert topk_recall([1.0, 0.5, 0.2], [0.3, 0.3, 0.1], 1) == pytest.approx(0.5)
    assert topk_recall([1.0, 0.5, 0.2], [0.3, 0.3, 0.1], 2) == 1.0  # both tied make the top 2
    # one sure pick (4 s) and one slot drawn from three tied: 1 s, 2 s or a failure
    latency, pred = [4.0, 1.0, 2.0, np.inf], [0.9, 0.3, 0.3, 0.3]
    assert expected_topk_min(latency, pred, 2) == pytest.approx((1 + 2 + 4) / 3)
    assert expected_topk_min(latency, pred, 1) == 4.0  # no tie at the first place
    assert expected_topk_min([np.inf, np.inf, 1.0], [0.5, 0.5, 0.1], 1) == np.inf
    # a network whose only task's three candidates tie: the pick is 2 s on average
    assert network_topk_score([1.0, 2.0, 3.0], [0.0] * 3, ["a"] * 3, {"a": 1}, k=1) == \
        pytest.approx(1 / 2)


def test_the_expectation_matches_counting_every_draw():
    """expected_topk_min's closed form against the mean over every subset of the tied."""
    from itertools import combinations

    rng = np.random.default_rng(0)
    values = rng.permutation(np.r_[rng.random(9), np.inf])
    pred = np.r_[[0.9, 0.8], [0.5] * 7, [0.1]]
    for k in range(1, 10):
        sure = values[:min(k, 2)].min()
        m = k - 2
        draws = [min(sure, values[2:9][list(c)].min(initial=np.inf))
                 for c in combinations(range(7), m)] if m > 0 else [sure]
        assert expected_topk_min(values, pred, k) == pytest.approx(np.mean(draws)), k


def test_ties_count_as_agreement_in_pairwise_accuracy():
    assert pairwise_accuracy([0.2, 1.0, 0.5], [0.3] * 3) == pytest.approx(2 / 3)  # (0,1), (0,2)
    assert pairwise_accuracy([1.0, 1.0], [0.2, 0.1]) == 0.0  # tie in y, not in p
    assert topk_recall([1.0, 1.0, 0.5], [0.0, 0.9, 0.1], 1) == 0.0  # topk(y) = {0} by order


def test_one_candidate_and_all_failed():
    assert pairwise_accuracy([0.7], [3.0]) == 0.5
    assert pairwise_accuracy([], []) == 0.5
    assert peak_score([1.0], [3.0], 1) == 1.0
    assert average_peak_score([1.0], [3.0], 32) == 1.0
    assert topk_recall([1.0], [3.0], 1) == 1.0
    assert math.isnan(peak_score([0.0, 0.0], [1.0, 2.0], 1))


def test_per_task_weights_by_samples_and_skips_undefined():
    y = [1.0, 0.5, 1.0, 0.0, 0.0]
    p = [0.1, 0.9, 0.3, 1.0, 2.0]
    groups = ["a", "a", "b", "c", "c"]  # c: every candidate failed -> NaN, left out
    assert per_task(peak_score, y, p, groups, k=1) == pytest.approx((0.5 * 2 + 1.0) / 3)
    assert per_task(peak_score, y, p, groups, weights=[1, 1, 5], k=1) == pytest.approx(0.75)
    with pytest.raises(ValueError, match="2 weights for 3 tasks"):
        per_task(peak_score, y, p, groups, weights=[1, 1], k=1)


def test_network_topk_score():
    latency = [1.0, 2.0, 3.0, 4.0]
    pred = [0.1, 0.9, 0.9, 0.5]
    groups = ["a", "a", "b", "b"]
    # a: top-1 is 2 s (best 1 s), weight 2; b: top-1 is 3 s = best, weight 1
    assert network_topk_score(latency, pred, groups, {"a": 2, "b": 1}, k=1) == \
        pytest.approx((2 * 1 + 1 * 3) / (2 * 2 + 1 * 3))
    assert network_topk_score(latency, pred, groups, {"a": 2, "b": 1}, k=2) == 1.0
    # every top-k candidate failed: that task's latency is infinite, the network score 0
    assert network_topk_score([1.0, np.inf], [0.0, 1.0], ["a", "a"], {"a": 1}, k=1) == 0.0


def test_mismatched_lengths_are_refused():
    with pytest.raises(ValueError, match="y_true has 2 values but y_pred has 3"):
        pairwise_accuracy([1, 2], [1, 2, 3])


def test_a_profile_with_a_sliver_of_a_network_does_not_score_it_as_the_network():
    """hw-a measured all of net0; hw-b only one of its tasks (shared with a network collected
    there): net0 counts on hw-a, not on hw-b, whose mean would otherwise take the sliver's
    score as a whole network's."""
    from models.evaluate import (
        MIN_NETWORK_COVERAGE,
        _network_work,
        network_coverage,
        network_scores,
    )
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset(n_groups=8, per_group=6, hardware=("hw-a", "hw-b"))
    # groups alternate hardware (g % 2); net0 = workloads w0, w2, w4, w6 (all on hw-a) and
    # w1 on hw-b; net1 = the other hw-b tasks
    data.workload_networks.clear()
    data.workload_networks.update({f"w{g}": {"net0": 1} for g in (0, 2, 4, 6)})
    data.workload_networks.update({"w1": {"net0": 1, "net1": 1}, "w3": {"net1": 1},
                                   "w5": {"net1": 1}, "w7": {"net1": 1}})
    scores = np.arange(len(data), dtype=float)
    keys = set(network_scores(data, scores, k=1))
    assert keys == {"net0@hw-a", "net1@hw-b"}
    work = _network_work(data)
    assert network_coverage("net0", {"w1"}, work) == pytest.approx(0.2)
    assert network_coverage("net0", {"w0", "w2", "w4", "w6"}, work) >= MIN_NETWORK_COVERAGE


def test_a_profile_scored_alone_does_not_score_its_sliver_as_the_network():
    """Evaluated with its rows only (`--hardware hw-b`), hw-b's one task of net0 was all of
    net0 the data held: net0 scored 1.000 there, beside other profiles it was left out. The
    network's work comes from every task the store lists for it (Dataset.workload_flops),
    whichever rows were loaded; a data-movement task's 0 FLOPs count as no work."""
    from dataclasses import replace

    from core.errors import TenforgeError
    from models.evaluate import network_report, network_scores
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset(n_groups=8, per_group=6, hardware=("hw-a", "hw-b"))
    data.workload_networks.clear()
    data.workload_networks.update({f"w{g}": {"net0": 1} for g in (0, 2, 4, 6)})
    data.workload_networks.update({"w1": {"net0": 1, "net1": 1}, "w3": {"net1": 1},
                                   "w5": {"net1": 1}, "w7": {"net1": 1},
                                   "reshape": {"net0": 1, "net1": 1}})  # measured nowhere
    listed = {**{f"w{g}": 1e6 for g in range(8)}, "reshape": 0.0}
    only_b = np.flatnonzero(data.candidate_hardware() == 1)
    scores = np.arange(len(data), dtype=float)
    alone = data.subset(only_b)
    assert set(network_scores(alone, scores[only_b], k=1)) == {"net0@hw-b", "net1@hw-b"}
    store_listed = replace(data, workload_flops=listed).subset(only_b)
    assert set(network_scores(store_listed, scores[only_b], k=1)) == {"net1@hw-b"}
    beside = network_scores(replace(data, workload_flops=listed), scores, k=1)
    assert beside["net1@hw-b"] == network_scores(store_listed, scores[only_b], k=1)["net1@hw-b"]

    class Ranker:  # any scores will do: what is scored is the question
        def predict(self, d):
            return np.arange(len(d), dtype=float)

    report = network_report(Ranker(), store_listed, ("net0", "net1"))
    assert set(report["networks"]) == {"net1"}
    assert report["not_scored"] == {"hw-b": {"net0": pytest.approx(0.2)}}
    with pytest.raises(TenforgeError, match=r"no profile measured 50% or more of the work of "
                       r"net0, .*\(net0 \(20\.0%\) on hw-b\); collect the network"):
        network_report(Ranker(), store_listed, ("net0",))
