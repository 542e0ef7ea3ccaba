"""How much a learned search's online model weighs, task by task, chosen by the task's own data.

models/ms_adapter.py blends two models' scores for a task's search: the pre-trained one
(fine-tuned as the search goes) and an online one fit on the search's measurements alone. By
count, the online model weighs n / (n + half) after n measurements of the task, one fixed
`half` for every task. Measured on the Xeon (docs/tuning-results.md, session 69), no one half
suits every task: at 16, mobilenet_v2's 1x1 convolutions at 112x112 (which the prior ranked
badly) reached XGB's picks far sooner, and resnet18's heavy 3x3 convolutions (which it ranked
well) ended 2-3% behind them.

`PrequentialBlend` lets each task's measurements decide instead. Each measured batch is first
scored by both models as they stood before it was measured (prequentially: neither has seen
it), and kept. A task's weight is then the one, out of WEIGHTS, under which the blended scores
would have ordered the most pairs of its measured batches correctly (pairs within a batch only:
the models change between batches). Until a task has MIN_BATCHES such batches, or where weights
tie, the count rule's share stands (the nearest of the tied weights to it).

    blend = PrequentialBlend(half=64)
    blend.record(task, prior_scores, online_scores, latencies)  # before the models learn them
    share = blend.share(task, measured)  # the online model's weight for the task's next scores
"""

from __future__ import annotations

import numpy as np

# The online model's weights a task can get: eighths of the way from prior-only to online-only.
WEIGHTS = np.linspace(0.0, 1.0, 9)
# Scored batches of a task before they outvote the count rule: one batch of a dozen candidates
# ranks noisily (a 1-2 pair difference decides), two begin to agree with the task's later ones.
MIN_BATCHES = 2


def count_share(measured: int, half: int) -> float:
    """The online model's weight after `measured` of a task's measurements, by count alone."""
    return measured / (measured + half) if measured else 0.0


def concordant_pairs(scores: np.ndarray, latencies: np.ndarray) -> float:
    """Pairs of candidates the scores order as their latencies do (higher score = faster);
    a tie in score counts half, a tie in latency is not a pair."""
    faster = latencies[:, None] < latencies[None, :]  # i ran faster than j
    diff = scores[:, None] - scores[None, :]
    return float(np.sum(faster & (diff > 0)) + 0.5 * np.sum(faster & (diff == 0)))


class PrequentialBlend:
    """The online model's weight per task, from how each blend ranked the task's batches."""

    def __init__(self, half: int, min_batches: int = MIN_BATCHES):
        self.half = half
        self.min_batches = min_batches
        # task -> its scored batches: (prior scores, online scores, latencies), finite only
        self.batches: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self._best: dict[str, np.ndarray] = {}  # task -> the weights its batches tie on (cached)
        self.given: dict[str, float] = {}  # task -> the weight share() last gave it

    def record(self, task: str, prior: np.ndarray, online: np.ndarray,
               latencies: np.ndarray) -> None:
        """A batch of `task` the two models scored before either learned it. Failed
        candidates (infinite latency) rank nothing: MetaSchedule's rules already keep most
        out, and what fails is a build's fault more than a model's."""
        latencies = np.asarray(latencies, np.float64)
        ok = np.isfinite(latencies)
        if ok.sum() < 2:
            return
        self.batches.setdefault(task, []).append(
            (np.asarray(prior, np.float64)[ok], np.asarray(online, np.float64)[ok],
             latencies[ok]))
        self._best.pop(task, None)

    def share(self, task: str, measured: int) -> float:
        """The online model's weight in `task`'s scores after `measured` of its measurements."""
        by_count = count_share(measured, self.half)
        batches = self.batches.get(task, [])
        if len(batches) < self.min_batches:
            return by_count
        if task not in self._best:
            self._best[task] = best_weights(batches)
        best = self._best[task]
        self.given[task] = float(best[np.argmin(np.abs(best - by_count))])
        return self.given[task]


def best_weights(batches: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> np.ndarray:
    """The WEIGHTS whose blends order the most pairs of the batches correctly (all that tie)."""
    right = np.array([sum(concordant_pairs((1 - w) * prior + w * online, lat)
                          for prior, online, lat in batches) for w in WEIGHTS])
    return WEIGHTS[right == right.max()]
