"""bench/hold_check.py: a held database keeps each task's best record, and for a heavy task the
re-measured record of its top few that held up best (tiny matmuls, really built and run)."""

import pytest

from bench.hold_check import hold, records_by_task, write_database
from tests.test_task_bests import _database


def test_light_tasks_keep_their_best_and_the_held_database_has_one_record_each(tmp_path):
    folder = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6], 16: [9e-6, 8e-6]})
    tasks = records_by_task(folder)
    assert sorted(len(r) for r in tasks.values()) == [2, 2]  # the failed record left out
    kept = hold(tasks, profile=None, top=2, processes=1, min_s=1.0, report=lambda _: None)
    assert sorted(secs for secs, _ in kept.values()) == [[2e-6], [8e-6]]
    write_database(kept, tmp_path / "held")
    again = records_by_task(str(tmp_path / "held"))
    assert sorted(r[0][0] for r in again.values()) == pytest.approx([2e-6, 8e-6])
    assert all(len(r) == 1 for r in again.values())


@pytest.mark.slow
def test_a_heavy_task_keeps_the_record_whose_worst_fresh_measurement_is_lowest(tmp_path):
    from tasks.hardware import resolve_profile

    folder = _database(tmp_path / "a", {64: [3e-6, 4e-6, 5e-6]})
    said: list[str] = []
    kept = hold(records_by_task(folder), resolve_profile("local-1t"), top=2, processes=2,
                min_s=0.0, report=said.append)
    [(secs, record)] = kept.values()
    assert len(said) == 1 and "of 2" in said[0]
    assert all(0 < s < 1e-2 for s in secs)  # measured now, not the recorded 3 or 4 us
    assert float(record.run_secs[0]) in (3e-6, 4e-6)  # one of the top 2
