"""Keep a learned search's picks mixed over a task's innermost tile factor (`tile_mix`).

Why: on the Zen 4's mobilenet_v2 the learned search ended 1.58x behind MetaSchedule's XGB on
one task, the 112x112 pointwise convolution 16->96 (docs/tuning-results.md, session 108). It
put 381 of 397 trials on a 16-lane innermost output block, where XGB settled on 8 lanes; both
reach ~360-390 us, but fast tilings of the other loops are rare with 16 lanes. The pre-trained
model scores 16-lane programs higher than 8-lane ones (mean score 4.0 vs 2.5) and ranks the
16-lane programs measured on that task no better than chance (Spearman 0.0-0.1, against 0.6
within 8 lanes; session 109): the search measured where the model was blind, and its online
model, fed only 16-lane programs, could not learn otherwise.

A program's *group* is the innermost factor of its last spatial tile, the loop the CPU
vectorizes (a convolution's output-channel block, a matmul's output column): the last
SamplePerfectTile decision with the most levels (MultiLevelTiling splits spatial loops into
more levels than reduction ones). A task's *dominant* group is the one its measured programs
fall in most often (before any: the group of the best-scored program asked about). While
fewer than `share` of a task's measurements lie outside it, every other group's scores are
lifted by one amount, so the best of them ties the best of the dominant group; within a group
the model's order stands, and groups it scores far lower (scalar or 2-lane loops) stay low.
MetaSchedule's evolutionary search keeps the top of each generation by score and breeds in
proportion to it, so the lift puts the best other-group programs among a round's picks until
the share is met, then the model's own order returns: a quota, as epsilon-greedy is one, but
over the decision the model is surest and most wrong about.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Hashable, Sequence

import numpy as np

# The share of a task's measurements kept outside its dominant group (MetaSchedule's XGB put
# 37% of that pointwise task's trials outside its favourite group, the learned search 4%).
TILE_MIX = 0.25


def innermost_group(tiles: Sequence[Sequence[int]]) -> int | None:
    """The innermost factor of the last tile decision with the most levels (see the module
    docstring); None for a program without tile decisions."""
    if not tiles:
        return None
    levels = max(len(t) for t in tiles)
    return int([t for t in tiles if len(t) == levels][-1][-1])


def trace_group(trace: Any) -> int | None:
    """innermost_group of a MetaSchedule Trace object's SamplePerfectTile decisions, in the
    order of its instructions."""
    tiles = []
    for inst in trace.insts:
        if inst.kind.name == "SamplePerfectTile":
            decision = trace.get_decision(inst)
            if decision is not None:
                tiles.append([int(getattr(f, "value", f)) for f in decision])
    return innermost_group(tiles)


def json_group(trace: Sequence[Any]) -> int | None:
    """innermost_group of a trace as a database stores it: JSON [instructions, decisions],
    an instruction [kind, inputs, attrs, outputs], a decision [instruction index, value]."""
    instructions, decisions = trace[0], trace[1]
    return innermost_group([list(value) for index, value in sorted(decisions, key=lambda d: d[0])
                            if instructions[index][0] == "SamplePerfectTile"])


def dominant_group(measured: Counter, scores: np.ndarray,
                   groups: Sequence[Hashable]) -> Hashable:
    """The group a task measured most (ties: the first counted); before any, the group of the
    best-scored program in `groups`."""
    if measured:
        return measured.most_common(1)[0][0]
    return groups[int(np.argmax(scores))]


def lifted(scores: np.ndarray, groups: Sequence[Hashable], measured: Counter,
           share: float) -> np.ndarray:
    """`scores` with every group but the dominant one lifted, so their best ties the dominant
    group's best, while fewer than `share` of the `measured` programs (group -> count) lie
    outside the dominant group; `scores` as given otherwise, or where only one group (or only
    programs without a group, None) was asked about."""
    if not len(scores):
        return scores
    dominant = dominant_group(measured, scores, groups)
    total = sum(measured.values())
    if total and (total - measured[dominant]) >= share * total:
        return scores
    mine = np.array([g == dominant for g in groups])
    other = np.array([g is not None for g in groups]) & ~mine
    if not mine.any() or not other.any():
        return scores
    gap = scores[mine].max() - scores[other].max()
    if gap <= 0:
        return scores
    out = np.array(scores, dtype=float, copy=True)
    out[other] += gap
    return out


# Steering (`steered`, session 111): the lift above spends its quota in the model's order
# among the other groups. On the Zen 4's resnet18 (seed 8) that order put 14 of the quota's
# trials on 4-lane programs and 4 on 16-lane ones, while the search without the mix found the
# stem convolution's best in 16 lanes (2252 against 3137 us); on mobilenet_v2 (seed 14) the
# mix never measured the stem's 16-wide programs, where XGB found its best (255 against 356
# us). Steering lets measurements, not the model, choose where the quota goes. Measured
# (session 111, docs/tuning-results.md): it won seed 8's stem (2205 us) and lost resnet18's
# seed 9 and mobilenet_v2's seed 14, where an early scalar program led the stem and took 58 of
# its 82 trials: a leader chosen by one fast program among few measured is noise. A bench
# variant (`-steer`), off by default.
PROBES = 2  # groups never measured that one call lifts, in the model's order


def group_bests(groups: Sequence[Hashable], latencies: Sequence[float],
                bests: dict[Hashable, float] | None = None) -> dict[Hashable, float]:
    """`bests` (group -> the lowest latency measured in it) updated with one batch; failed
    runs (infinite latency) and programs without a group (None) leave it as it was."""
    bests = dict(bests or {})
    for group, latency in zip(groups, latencies):
        if group is not None and np.isfinite(latency):
            bests[group] = min(latency, bests.get(group, np.inf))
    return bests


def steered(scores: np.ndarray, groups: Sequence[Hashable], measured: Counter,
            bests: dict[Hashable, float], share: float, probes: int = PROBES) -> np.ndarray:
    """`scores` with chosen groups lifted so each one's best ties the top score; within a
    group the model's order stands. The *leader* is the group holding the task's fastest
    measured program (before any: the group of the best-scored program); it is always lifted,
    so a group the measurements favour is searched even where the model prefers another.
    While fewer than `share` of the `measured` programs (group -> count, failures too) lie
    outside the leader, up to `probes` groups never measured (the model's best first) and the
    *runner-up* (the other group with the fastest measured program) are lifted too: the
    quota goes where a group has measured well, and each group present gets measured once."""
    present = {g for g in groups if g is not None}
    if len(present) < 2:
        return scores
    labels = np.array(groups, dtype=object)
    top_of = {g: float(scores[labels == g].max()) for g in present}
    leader = (min(bests, key=bests.get) if bests
              else max(present, key=lambda g: (top_of[g], str(g))))
    chosen = {leader} & present
    total = sum(measured.values())
    if total - measured[leader] < share * total or not total:
        unprobed = sorted((g for g in present if not measured[g] and g != leader),
                          key=lambda g: (-top_of[g], str(g)))
        chosen.update(unprobed[:probes])
        rivals = [g for g in bests if g != leader and g in present]
        if rivals:
            chosen.add(min(rivals, key=bests.get))
    out = np.array(scores, dtype=float, copy=True)
    top = float(scores.max())
    for group in chosen:
        out[labels == group] += top - top_of[group]
    return out
