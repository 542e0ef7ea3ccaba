"""Instant tuning's second pass: the trials left after the first spread by latency share."""

from tasks.instant import allocate_by_share, measure_top_for


def test_the_budget_follows_each_tasks_share_of_the_latency():
    assert allocate_by_share([6.0, 3.0, 1.0], 10, [100, 100, 100]) == [6, 3, 1]


def test_what_a_capped_task_cannot_take_goes_to_the_others():
    # the heaviest task's design space holds 2 more candidates; the rest goes by share
    assert allocate_by_share([8.0, 1.0, 1.0], 12, [2, 100, 100]) == [2, 5, 5]


def test_rounding_never_loses_a_trial_and_untimed_tasks_get_none():
    counts = allocate_by_share([1.0, 1.0, 1.0, 0.0], 7, [100, 100, 100, 100])
    assert sum(counts) == 7 and counts[3] == 0 and max(counts) - min(counts[:3]) <= 1


def test_caps_that_cannot_hold_the_budget_end_the_allocation():
    assert allocate_by_share([1.0, 1.0], 50, [3, 4]) == [3, 4]
    assert allocate_by_share([1.0], 0, [5]) == [0]


def test_the_first_pass_measures_between_two_and_eight_per_task():
    assert measure_top_for(16, 4) == 4
    assert measure_top_for(300, 23) == 8  # the rest goes to the second pass
    assert measure_top_for(10, 23) == 2
