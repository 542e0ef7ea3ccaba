"""How a tuning budget is spread over a network's tasks: measurements by each task's share of
the estimated latency (allocate_by_share), and candidates ranked by FLOPs x occurrences
(samples_by_importance). Plain arithmetic, no TVM."""

from __future__ import annotations


def allocate_by_share(latency: list[float], budget: int, caps: list[int]) -> list[int]:
    """Split `budget` measurements over tasks in proportion to `latency` (each task's share of
    the estimated network time), none beyond its cap; what a capped task cannot take goes to
    the others (largest remainders first, so the counts sum to the budget where caps allow)."""
    given = [0] * len(latency)
    left = budget
    while left > 0:
        open_ = [i for i, (t, c) in enumerate(zip(latency, caps)) if t > 0 and given[i] < c]
        if not open_:
            break
        total = sum(latency[i] for i in open_)
        exact = {i: left * latency[i] / total for i in open_}
        spent = 0
        for i in open_:
            add = min(int(exact[i]), caps[i] - given[i])
            given[i] += add
            spent += add
        if spent == 0:  # every share rounds down to nothing: the largest remainders get one
            for i in sorted(open_, key=lambda i: -(exact[i] - int(exact[i])))[:left]:
                given[i] += 1
                spent += 1
        left -= spent
    return given


SHARE_FLOOR = 16  # samples_by_importance: what the lightest task still ranks
SHARE_CAP = 4  # ... and the heaviest at most, times the mean


def samples_by_importance(importance: list[float], mean: int, floor: int = SHARE_FLOOR,
                          cap: int | None = None) -> list[int]:
    """Candidates each task samples and ranks when `mean` a task are spread by `importance`
    (FLOPs x occurrences): every task at least `floor` (at most `mean`), the rest of
    `mean` x tasks in proportion, none beyond `cap` (default SHARE_CAP x mean). On
    mobilenet_v2 NCHW16c at a mean of 64: the seven heaviest convolutions, where a warm start's
    picks fell 2-2.6x short of the search's final bests (docs/tuning-results.md), rank 133-214,
    layout transforms 16; a warm start 7-30% shorter on the Zen 4, but no sooner at XGB's
    final (3.55x against w128's 3.85x, median of 3 seeds, docs/tuning-results.md)."""
    floor = min(floor, mean)
    cap = max(cap or SHARE_CAP * mean, floor)
    extra = allocate_by_share(importance, mean * len(importance) - floor * len(importance),
                              [cap - floor] * len(importance))
    return [floor + e for e in extra]
