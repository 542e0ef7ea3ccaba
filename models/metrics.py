"""Ranking metrics for cost models, exactly as in DESIGN.md section 3 (TenSet's definitions).

Per-task functions take numpy arrays for ONE task (one workload on one hardware): `y_true` are
labels (min latency in the task / latency, higher is better, 0 for a failed candidate) and
`y_pred` are model scores in the same orientation. Each returns a float.

Ties: where equal scores straddle the k-th place, which of them make the top k is a coin toss
the model did not decide, so peak@k, the averaged peak curve, top-k recall and the network-level
top-k charge their expectation over a uniformly random order of the tied candidates
(`expected_topk_min`). A tree model scores many candidates alike, and charging the first-listed
one instead would credit or blame the store's row order. Where no tie straddles the k-th place
this is the plain top k. Pairwise accuracy counts a pair tied in both y and p as agreeing, as the
definition's [p_i > p_j] == [y_i > y_j] says; top-k recall's true top k (ties in y) keeps
candidate order.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["pairwise_accuracy", "peak_score", "average_peak_score", "topk_recall", "rmse",
           "per_task", "weighted_mean", "network_topk_score", "expected_topk_min"]


def _as_arrays(y_true, y_pred) -> tuple[np.ndarray, np.ndarray]:
    y = np.asarray(y_true, dtype=np.float64).ravel()
    p = np.asarray(y_pred, dtype=np.float64).ravel()
    if y.shape != p.shape:
        raise ValueError(f"y_true has {y.size} values but y_pred has {p.size}")
    return y, p


def _order(p: np.ndarray) -> np.ndarray:
    return np.argsort(-p, kind="stable")


def _top_k(p: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, int]:
    """(surely in, tied at the k-th place, how many of the tied make the top k): masks over the
    candidates. A NaN score ranks last."""
    q = np.where(np.isnan(p), -np.inf, p)
    if k >= q.size:
        return np.ones(q.size, bool), np.zeros(q.size, bool), 0
    threshold = np.partition(q, q.size - k)[q.size - k]  # the k-th largest score
    above = q > threshold
    return above, q == threshold, k - int(above.sum())


def expected_topk_min(values, y_pred, k: int) -> float:
    """E[min of `values` over the k top-predicted candidates], the order among candidates tied
    at the k-th place drawn uniformly at random; plain min over the top k where nothing ties.

    For the network-level top-k, `values` are latencies (inf for a failed candidate); for peak@k,
    negated labels."""
    v = np.asarray(values, dtype=np.float64).ravel()
    above, tied, m = _top_k(np.asarray(y_pred, dtype=np.float64).ravel(), k)
    sure = v[above].min() if above.any() else np.inf
    if m == 0:
        return float(sure)
    drawn = np.sort(v[tied])
    g = drawn.size
    # the i-th smallest tied value is the draw's minimum with P = C(g-1-i, m-1) / C(g, m),
    # i = 0..g-m; P(0) = m/g, P(i+1) / P(i) = (g-m-i) / (g-1-i)
    i = np.arange(g - m)
    prob = m / g * np.cumprod(np.r_[1.0, (g - m - i) / (g - 1 - i)])
    outcomes = np.minimum(sure, drawn[:g - m + 1])
    # rounding in the sum could step outside the outcomes (a top-1 of 1.0000000000000002)
    return float(np.clip(np.sum(prob * outcomes), outcomes[0], outcomes[-1]))


def pairwise_accuracy(y_true, y_pred) -> float:
    """#{i<j : [p_i > p_j] == [y_i > y_j]} / (n(n-1)/2); 0.5 when n <= 1."""
    y, p = _as_arrays(y_true, y_pred)
    n = y.size
    if n <= 1:
        return 0.5
    i, j = np.triu_indices(n, k=1)
    return float(np.mean((p[i] > p[j]) == (y[i] > y[j])))


def peak_score(y_true, y_pred, k: int) -> float:
    """max(y over the k top-predicted) / max(y); NaN when no candidate succeeded (max(y) = 0)."""
    y, p = _as_arrays(y_true, y_pred)
    if y.size == 0 or y.max() <= 0:
        return float("nan")
    return -expected_topk_min(-y, p, k) / float(y.max())


def average_peak_score(y_true, y_pred, k: int) -> float:
    """TenSet's averaged curve: mean over i = 1..min(k, n) of peak_score@i."""
    y, p = _as_arrays(y_true, y_pred)
    if y.size == 0 or y.max() <= 0:
        return float("nan")
    curve = [-expected_topk_min(-y, p, i) for i in range(1, min(k, y.size) + 1)]
    return float(np.mean(curve) / y.max())


def topk_recall(y_true, y_pred, k: int) -> float:
    """|topk(p) ∩ topk(y)| / k (a task with fewer than k candidates cannot reach 1); the tied
    candidates at p's k-th place each count with the chance that they are drawn."""
    y, p = _as_arrays(y_true, y_pred)
    best = np.zeros(y.size, bool)
    best[_order(y)[:k]] = True
    above, tied, m = _top_k(p, k)
    drawn = m * (best & tied).sum() / tied.sum() if m else 0.0
    return float((best & above).sum() + drawn) / k


def rmse(y_true, y_pred) -> float:
    y, p = _as_arrays(y_true, y_pred)
    return float(np.sqrt(np.mean((y - p) ** 2))) if y.size else float("nan")


# ----------------------------------------------------------------------------- across tasks


def weighted_mean(values, weights) -> float:
    """Weighted mean that skips NaN values (tasks where the metric is undefined)."""
    v = np.asarray(values, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    keep = ~np.isnan(v)
    if not keep.any() or w[keep].sum() <= 0:
        return float("nan")
    return float(np.sum(v[keep] * w[keep]) / np.sum(w[keep]))


def per_task(metric: Callable[..., float], y_true, y_pred, groups, weights=None,
             **kwargs) -> float:
    """`metric` on each task (equal `groups` values), then the weighted mean over tasks.

    weights: one per task in sorted order of the group ids; default = samples per task."""
    y, p = _as_arrays(y_true, y_pred)
    g = np.asarray(groups).ravel()
    ids, inverse, counts = np.unique(g, return_inverse=True, return_counts=True)
    order = np.argsort(inverse, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(counts)])
    values = [metric(y[order[a:b]], p[order[a:b]], **kwargs)
              for a, b in zip(bounds[:-1], bounds[1:])]
    w = counts if weights is None else np.asarray(weights, dtype=np.float64)
    if len(w) != len(ids):
        raise ValueError(f"{len(w)} weights for {len(ids)} tasks")
    return weighted_mean(values, w)


def network_topk_score(latency, y_pred, groups, task_weights: dict, k: int) -> float:
    """Σ_t w_t·minlat_t / Σ_t w_t·lat_k(t): lat_k(t) = best measured latency among the k
    top-predicted candidates of task t (inf if all k failed; its expectation over the order of
    tied candidates, `expected_topk_min`), w_t = times t occurs in the network.

    latency: seconds per candidate (inf or NaN for a failed one); task_weights: group id -> w_t.
    Tasks with no successful candidate are left out (they have no minlat)."""
    lat = np.asarray(latency, dtype=np.float64).ravel().copy()
    lat[~np.isfinite(lat)] = np.inf
    p = np.asarray(y_pred, dtype=np.float64).ravel()
    g = np.asarray(groups).ravel()
    num = den = 0.0
    for task, weight in task_weights.items():
        idx = np.flatnonzero(g == task)
        if idx.size == 0 or not np.isfinite(lat[idx].min()):
            continue
        best_k = expected_topk_min(lat[idx], p[idx], k)
        num += weight * lat[idx].min()
        den += weight * best_k
    if den == 0:
        return float("nan")
    return float(num / den)  # inf in den (all top-k failed) gives 0: the network would not run
