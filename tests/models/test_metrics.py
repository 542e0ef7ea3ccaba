"""The metric functions against hand-computed cases (DESIGN.md section 3)."""

import math

import numpy as np
import pytest

from models.metrics import (
    average_peak_score,
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


def test_ties_keep_candidate_order_and_count_as_agreement():
    y, p = [0.2, 1.0, 0.5], [0.3, 0.3, 0.3]
    assert peak_score(y, p, 1) == pytest.approx(0.2)    # first-listed candidate wins the tie
    assert pairwise_accuracy(y, p) == pytest.approx(2 / 3)  # (0,1), (0,2) agree: both "not >"
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
