"""bench/tile_groups.py: a task's measurements split by tile group, pooled over databases, for
the tasks the after side did worst on."""

import pytest

from bench import tile_groups
from bench.tile_groups import group_rows, outside_share
from tests.test_task_bests import _database


def test_groups_are_counted_most_measured_first_with_best_fifth_and_median():
    measured = [(16, 9e-6), (16, 5e-6), (8, 4e-6), (16, 7e-6), (16, 6e-6), (16, 8e-6), (1, 2e-5)]
    rows = group_rows(measured)
    assert [r[:2] for r in rows] == [(16, 5), (8, 1), (1, 1)]
    assert rows[0][2:] == pytest.approx((5e-6, 9e-6, 7e-6))
    assert rows[1][3] is None  # a group measured fewer than five times has no fifth best
    assert outside_share(measured) == pytest.approx(2 / 7)
    assert outside_share([]) == 0


def test_main_lists_the_worst_task_first_per_side(tmp_path, monkeypatch, capsys):
    before = _database(tmp_path / "a", {4: [2e-6, 3e-6], 16: [9e-6]})
    after = _database(tmp_path / "b", {4: [4e-6], 16: [9e-6, 1e10]})
    monkeypatch.setattr("sys.argv", ["tile_groups.py", before, after, "--top", "1"])
    tile_groups.main()
    out = capsys.readouterr().out
    # the 4-row matmul got 2x slower, the 16-row one did not: only the former is shown
    assert "(4, 8) (8, 8): median best 2.0 -> 4.0 us (2.00)" in out and "(16, 8)" not in out
    assert "before: 2 valid over 1 databases, 0% outside" in out
    assert "innermost None:    1 measured, best      4.0 us" in out  # untiled: no group


def test_sides_with_no_task_in_common_exit_with_one_line(tmp_path, monkeypatch):
    before = _database(tmp_path / "a", {4: [3e-6]})
    after = _database(tmp_path / "b", {16: [9e-6]})
    monkeypatch.setattr("sys.argv", ["tile_groups.py", before, after])
    with pytest.raises(SystemExit, match="no task is in every database of both sides"):
        tile_groups.main()
