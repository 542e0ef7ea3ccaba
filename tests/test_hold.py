"""tasks/tuning/hold.py (and bench/hold_check.py, which uses it): the held database keeps each
task's best record, and for a heavy task the re-measured record of its top few that held up
best in fresh processes (tiny matmuls, really built and run)."""

import pytest

from storage.ms_database import records_by_task
from tasks.tuning.hold import HELD_DIR, heavy_tasks, hold, hold_database, write_database
from tests.test_task_bests import _database


def test_heavy_tasks_are_those_carrying_a_share_of_the_estimate_by_occurrences():
    best = {"a": 1.0, "b": 0.5, "c": 0.01}
    assert heavy_tasks(best, {"a": 1, "b": 4, "c": 10}, 0.2) == ["b", "a"]  # 2.0, 1.0 of 3.1
    assert heavy_tasks(best, {}, 0.5) == ["a"]  # no weight: once each
    assert heavy_tasks(best, {}, 0.2, min_s=0.6) == ["a"]  # b's 0.5 s is 33% but under 0.6 s
    assert heavy_tasks({"a": 1e-6}, {}, 0.05) == []  # all of a tiny network, under HOLD_MIN_S
    assert heavy_tasks({}, {}, 0.05) == []


def test_light_tasks_keep_their_best_and_the_held_database_has_one_record_each(tmp_path):
    folder = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6], 16: [9e-6, 8e-6]})
    tasks = records_by_task(folder)
    assert sorted(len(r) for r in tasks.values()) == [2, 2]  # the failed record left out
    kept, measured = hold(tasks, [], profile=None, top=2, processes=1, report=lambda _: None)
    assert measured == 0
    assert sorted(secs for secs, _ in kept.values()) == [[2e-6], [8e-6]]
    write_database(kept, tmp_path / "held")
    again = records_by_task(str(tmp_path / "held"))
    assert sorted(r[0][0] for r in again.values()) == pytest.approx([2e-6, 8e-6])
    assert all(len(r) == 1 for r in again.values())


@pytest.mark.slow
def test_a_heavy_task_keeps_the_record_whose_worst_fresh_measurement_is_lowest(tmp_path):
    from tasks.hardware import resolve_profile

    # recorded impossibly fast (1 ns): the best runs slower fresh, so its top 2 are measured
    folder = _database(tmp_path / "a", {64: [1e-9, 2e-9, 3e-9], 4: [1e-12]})
    said: list[str] = []
    result = hold_database(folder, {}, resolve_profile("local-1t"), share=0.5, top=2,
                           processes=2, min_s=0.0, report=said.append)
    # the 64-row matmul: its best x 2, then its best and #2 again x 2, in the same processes
    assert (result.heavy, result.measured) == (1, 6)
    assert result.database_dir == str(tmp_path / "a" / HELD_DIR)
    assert len(said) == 2 and "of 2" in said[1]
    held = records_by_task(result.database_dir)
    assert sorted(len(r) for r in held.values()) == [1, 1]
    [heavy] = [r[0] for r in held.values() if r[0][0] > 1e-12]
    assert 1e-8 < heavy[0] < 1e-2  # measured now
    assert result.changed in (0, 1)  # the records share one (empty) trace: either may win
    # run again (a resumed run), the held folder is replaced, the search's left alone
    again = hold_database(folder, {}, resolve_profile("local-1t"), share=0.5, top=1,
                          processes=1, min_s=0.0, report=said.append)
    assert (again.heavy, again.measured, again.changed) == (1, 1, 0)
    assert sorted(len(r) for r in records_by_task(folder).values()) == [1, 3]
    # a best that holds (recorded 1 s, runs in microseconds): the rest of its top stays unmeasured
    steady = _database(tmp_path / "b", {64: [1.0, 2.0], 4: [1e-12]})
    kept = hold_database(steady, {}, resolve_profile("local-1t"), share=0.5, top=2, processes=2,
                         min_s=0.0, report=said.append)
    assert (kept.heavy, kept.measured, kept.changed) == (1, 2, 0) and "of 1" in said[-1]


def test_a_slipped_best_is_weighed_against_the_rest_in_the_same_processes(tmp_path,
                                                                          monkeypatch):
    """Step 1 finds the best slow (a slow process); measured again beside the rest it is the
    fastest there, or slower by no more than the tolerance, so it stays: step 1's time never
    competes with step 2's. Only a record more than the tolerance faster beside it replaces it."""
    import tasks.tuning.hold as hold_module

    folder = _database(tmp_path / "a", {16: [1e-3, 1.1e-3, 1.2e-3]})
    tasks = records_by_task(folder)
    calls: list[int] = []

    def fresh(jobs, profile, processes):  # step 1: the best at 2.0 ms; step 2: 1.1, 1.3, 1.2
        calls.append(len(jobs))
        times = [2e-3] if len(calls) == 1 else [1.1e-3, 1.3e-3, 1.2e-3]
        return [(t, [t]) for t in times]

    monkeypatch.setattr(hold_module, "_worst_fresh", fresh)
    said: list[str] = []
    [key] = tasks
    kept, measured = hold(tasks, [key], profile=_Profile(), top=3, processes=2,
                          report=said.append)
    assert calls == [1, 3] and measured == 2 + 6
    assert kept[key][1] is tasks[key][0][1] and kept[key][0] == [1.1e-3]
    assert "fresh 2.000 then 1.100 beside the rest; kept #1 of 3" in said[-1]
    for step_two, kept_index in (([1.25e-3, 1.3e-3, 1.2e-3], 0),  # within 10% of #3: stays
                                 ([1.5e-3, 1.3e-3, 1.2e-3], 2)):  # 1.25x #3: #3 replaces it
        calls.clear()
        monkeypatch.setattr(hold_module, "_worst_fresh",
                            lambda jobs, profile, processes, step_two=step_two:
                            calls.append(len(jobs)) or [(t, [t]) for t in
                                                        ([2e-3] if len(calls) == 1 else step_two)])
        kept, _ = hold(tasks, [key], profile=_Profile(), top=3, processes=2, report=said.append)
        assert kept[key][0] == [step_two[kept_index]]
        assert f"kept #{kept_index + 1} of 3" in said[-1]
    # a best that held: nothing else measured, its fresh time recorded
    calls.clear()
    monkeypatch.setattr(hold_module, "_worst_fresh",
                        lambda jobs, profile, processes: calls.append(len(jobs)) or
                        [(1.05e-3, [1.05e-3])])
    kept, measured = hold(tasks, [key], profile=_Profile(), top=3, processes=2,
                          report=said.append)
    assert calls == [1] and measured == 2 and kept[key][0] == [1.05e-3]


class _Profile:  # what hold() reads of a profile when the measuring is stubbed
    target = "llvm"


def test_a_hold_that_stops_leaves_the_build_to_the_searchs_database(tmp_path, monkeypatch):
    import tasks.tuning.hold as hold_module
    from tasks.hardware import resolve_profile
    from tasks.tuning.hold import try_hold

    folder = _database(tmp_path / "a", {4: [3e-6, 2e-6]})
    said: list[str] = []
    held = try_hold(folder, {}, resolve_profile("local-1t"), 0.05, 16, said.append)
    assert (held.heavy, held.measured) == (0, 0)  # a tiny task: nothing measured again
    assert said[-1] == "hold: 0 of 0 heavy task(s) changed pick after 0 measurements in 0 s"
    for failure in (KeyboardInterrupt(), RuntimeError("Check failed: x\n")):
        def stops(*args, failure=failure, **kwargs):
            raise failure

        monkeypatch.setattr(hold_module, "hold_database", stops)
        assert try_hold(folder, {}, resolve_profile("local-1t"), 0.05, 16, said.append) is None
        assert said[-1].startswith(f"hold stopped ({type(failure).__name__}") and \
            said[-1].endswith("compiling from the search's database")
