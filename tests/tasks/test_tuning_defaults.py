"""The search a learned model gets when a request leaves its settings out
(tasks/tuning/defaults.py): the tuning bench's default learned search, and a warm start that
never takes more than half of the trials."""

from __future__ import annotations

import pytest

from bench.tuning_matrix import search_settings
from tasks.tuning.contexts import WARM_SAMPLES
from tasks.tuning.defaults import (
    DEFAULT_TILE_MIX,
    WARM_POPULATION_RATIO,
    WARM_START,
    affordable_warm_start,
    learned_search,
)


def test_left_out_a_learned_search_gets_the_benchs_warm_start_and_xgb_or_instant_none():
    assert learned_search(True, "gradient", None, None) == (WARM_START, DEFAULT_TILE_MIX)
    assert learned_search(True, "gain", None, None) == (WARM_START, DEFAULT_TILE_MIX)
    assert learned_search(False, "gradient", None, None) == (None, None)  # MetaSchedule's XGB
    assert learned_search(True, "instant", None, None) == (None, None)  # no search after it


def test_zero_turns_a_default_off_and_any_other_value_reaches_the_checks_as_asked():
    assert learned_search(True, "gradient", 0, 0.0) == (None, None)
    assert learned_search(True, "gradient", 2, 0.3) == (2, 0.3)
    # what the checks refuse (tasks/tuning/checks.py) passes through unchanged
    assert learned_search(False, "gradient", 2, 1.5) == (2, 1.5)
    assert learned_search(True, "instant", -1, None) == (-1, None)


def test_the_defaults_are_the_benchs_default_learned_search():
    """What a retune leaves out is what the tables of docs/tuning-results.md measured."""

    class Args:
        trials, minutes, warm, samples, top = 1000, 60.0, 4, 256, 4
        instant_trials, instant_minutes, lean_batch = 400, 5.0, 8

    bench = search_settings("warm-focus-pop4-w128-online-nchw16c", Args())
    assert bench["warm_start"] == WARM_START and bench["warm_samples"] == WARM_SAMPLES
    assert bench["population_ratio"] == WARM_POPULATION_RATIO and bench["warm_focus"]
    assert bench["tile_mix"] == DEFAULT_TILE_MIX


@pytest.mark.parametrize("asked, trials, tasks, expected", [
    (4, 1000, 21, 4),  # the bench's budgets: untouched (resnet18)
    (4, 1000, 53, 4),  # mobilenet_v2's many tasks: 212 of 1,000
    (4, 64, 21, 1),  # retune's default budget on resnet18: 21 of 64
    (4, 16, 2, 4),  # 8 of 16: half, as much as it may take
    (4, 16, 5, 1),
    (4, 8, 5, 0),  # fewer trials than two a task: no warm start
    (2, 100, 0, 2),  # (no task to tune: nothing to divide by)
])
def test_a_warm_start_takes_at_most_half_of_the_trials(asked, trials, tasks, expected):
    assert affordable_warm_start(asked, trials, tasks) == expected
