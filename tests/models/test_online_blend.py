"""The per-task online-model weight chosen by a task's own measured batches."""

import numpy as np

from models.online_blend import (
    MIN_BATCHES,
    WEIGHTS,
    PrequentialBlend,
    concordant_pairs,
    count_share,
)

RNG = np.random.default_rng(0)


def _batch(size=12):
    latencies = RNG.uniform(1.0, 2.0, size)
    return latencies, -latencies  # scores that order the batch exactly (higher = faster)


def test_concordant_pairs_count_orderings_and_half_a_score_tie():
    latencies = np.array([1.0, 2.0, 3.0])
    assert concordant_pairs(np.array([3.0, 2.0, 1.0]), latencies) == 3
    assert concordant_pairs(np.array([1.0, 2.0, 3.0]), latencies) == 0
    assert concordant_pairs(np.array([1.0, 1.0, 1.0]), latencies) == 1.5
    assert concordant_pairs(np.array([2.0, 1.0]), np.array([1.0, 1.0])) == 0  # no pair


def test_the_model_that_ranked_a_task_right_takes_it_over():
    blend = PrequentialBlend(half=64)
    for _ in range(MIN_BATCHES):
        latencies, right = _batch()
        wrong = RNG.normal(0, 100, len(latencies))  # no order, and loud: any share of it hurts
        blend.record("prior-knows", right, wrong, latencies)
        blend.record("online-knows", wrong, right, latencies)
    assert blend.share("prior-knows", 200) == 0.0  # though the count rule says 0.76 online
    assert blend.share("online-knows", 5) == 1.0  # though the count rule says 0.07
    assert blend.given == {"prior-knows": 0.0, "online-knows": 1.0}


def test_too_few_batches_or_a_tie_leave_the_count_rule_standing():
    blend = PrequentialBlend(half=16)
    latencies, right = _batch()
    blend.record("task", right, right, latencies)
    assert blend.share("task", 16) == 0.5  # one batch: the count rule's n / (n + half)
    blend.record("task", right, right, latencies)
    # both models rank alike: every weight ties, the one nearest the count rule's wins
    for measured in (4, 16, 48):
        by_count = count_share(measured, 16)
        assert blend.share("task", measured) == WEIGHTS[np.argmin(np.abs(WEIGHTS - by_count))]


def test_failed_candidates_rank_nothing():
    blend = PrequentialBlend(half=64)
    blend.record("task", np.array([1.0, 2.0]), np.array([2.0, 1.0]),
                 np.array([1.0, np.inf]))  # one finite latency: no pair to learn from
    assert "task" not in blend.batches
    latencies, right = _batch(6)
    latencies[0] = np.inf
    blend.record("task", right, right, latencies)
    assert len(blend.batches["task"][0][2]) == 5
