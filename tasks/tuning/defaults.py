"""The search a learned cost model gets when a request leaves its settings out.

It is the tuning bench's default learned search (bench/tuning_matrix.py's
warm-focus-pop4-w128-online), the one the tables of docs/tuning-results.md measure against
MetaSchedule's XGB on every CPU: a warm start (the model's top 4 of 128 ranked samples a task,
measured before the search), the search focused after it, a population of 4x a round's batch.
Until session 113 a retune searched without a warm start unless asked, so its users got
another search than the one the tables report. MetaSchedule's XGB and the instant scheduler
keep none of it (a warm start ranks with a learned model and hands over to a search).

A warm start never spends more than half of the trials: a small budget over many tasks gets
fewer picks a task, or none (`affordable_warm_start`).
"""

from __future__ import annotations

WARM_START = 4  # the model's picks measured per task before the search
WARM_POPULATION_RATIO = 4  # after a warm start: the population is 4x a round's batch (pop4)
WARM_SHARE_MAX = 0.5  # the share of the trials a warm start may spend at most
# the tile mix's share by default (models/tile_mix.py; None: off). Ahead of the default in
# every median of 12 cells on the Zen 4's 16-lane code; on 8-lane code (the same chip with
# AVX-512 off) one resnet18 seed each, its quota spent on half-vector tiles (session 113)
DEFAULT_TILE_MIX: float | None = None


def learned_search(learned: bool, scheduler: str, warm_start: int | None,
                   tile_mix: float | None) -> tuple[int | None, float | None]:
    """`warm_start` and `tile_mix` resolved: None (left out) takes the default where a learned
    model searches, 0 turns it off (None); any other value stays as asked, for the checks."""
    searching = learned and scheduler != "instant"
    warm = (WARM_START if searching else None) if warm_start is None else (warm_start or None)
    mix = (DEFAULT_TILE_MIX if searching else None) if tile_mix is None else (tile_mix or None)
    return warm, mix


def affordable_warm_start(asked: int, trials: int, tasks: int) -> int:
    """The picks a task a warm start measures: `asked`, cut so that all of them together take
    at most WARM_SHARE_MAX of `trials` (0: too few trials for a warm start)."""
    return min(asked, int(trials * WARM_SHARE_MAX) // max(tasks, 1))
