"""bench/retimed_race.py's logic with hand-computed cases: the replay of a cell's records and
its check against the recorded curve, re-timed curves, the race, and the side-by-side order.
The timing itself is a fake here; the bench runs it for real (docs/tuning-results.md)."""

import json

import pytest

from bench.retimed_race import (
    check_replay,
    database_rows,
    main,
    race,
    replay,
    retimed_curve,
    seed_pairs,
    side_by_side_order,
    table_rows,
    time_side_by_side,
)

WEIGHTS = {"a": 1.0, "b": 2.0}
# commit order: a at 2 s, a failure of b, b at 3 s, a at 1 s, a tie at 1 s
ROWS = [("a", 2.0), ("b", None), ("b", 3.0), ("a", 1.0), ("a", 1.0)]


def test_replay_keeps_each_tasks_best_so_far_and_waits_for_every_task():
    got = replay(ROWS, WEIGHTS, [1, 3, 4, 5])
    assert got[1] == (None, {"a": 0})  # b has no valid row yet: no estimate
    assert got[3] == (2.0 + 2 * 3.0, {"a": 0, "b": 2})
    assert got[4] == (1.0 + 2 * 3.0, {"a": 3, "b": 2})
    assert got[5] == (7.0, {"a": 3, "b": 2})  # a tie keeps the earlier row


def test_database_rows_keep_commit_order_and_mark_failures(tmp_path):
    (tmp_path / "database_workload.json").write_text('["h0", "m0"]\n["h1", "m1"]\n')
    records = [[1, [["trace a"], [2.0, 4.0]]], [0, [["trace b"], [1e10]]],
               [0, [["trace c"], [1.0]]]]
    (tmp_path / "database_tuning_record.json").write_text(
        "\n".join(json.dumps(r) for r in records) + "\n")
    rows, lines = database_rows(tmp_path, lambda line: (line[0], line))
    assert rows == [("h1", 3.0), ("h0", None), ("h0", 1.0)]
    assert lines[0] == (["h1", "m1"], [["trace a"], [2.0, 4.0]])
    with pytest.raises(SystemExit, match="no MetaSchedule database there"):
        database_rows(tmp_path / "nowhere", lambda line: (line[0], line))


def test_replay_refuses_a_curve_longer_than_the_database():
    with pytest.raises(SystemExit, match="holds only 5 records"):
        replay(ROWS, WEIGHTS, [3, 9])


def test_check_replay_accepts_the_recorded_curve_and_refuses_another():
    replayed = replay(ROWS, WEIGHTS, [3, 4])
    check_replay("cell", [[3, 10.0, 8000.0], [4, 20.0, 7000.0]], replayed)  # ms
    with pytest.raises(SystemExit, match="gives 7000.0000 ms at trial 4, its curve says 6000"):
        check_replay("cell", [[3, 10.0, 8000.0], [4, 20.0, 6000.0]], replayed)


def test_retimed_curve_prices_each_points_picks_at_their_retimed_seconds():
    replayed = replay(ROWS, WEIGHTS, [3, 4])
    curve = [[3, 10.0, 8000.0], [4, 20.0, 7000.0]]
    retimed = {0: 2.5, 2: 2.0, 3: 1.5}
    assert retimed_curve(curve, replayed, WEIGHTS, retimed) == [
        [3, 10.0, 1e3 * (2.5 + 2 * 2.0)], [4, 20.0, 1e3 * (1.5 + 2 * 2.0)]]
    # a pick that failed every round: its point goes; the last point cannot
    assert retimed_curve(curve, replayed, WEIGHTS, {2: 2.0, 3: 1.5}) == [
        [4, 20.0, 1e3 * (1.5 + 2 * 2.0)]]
    with pytest.raises(SystemExit, match="final pick"):
        retimed_curve(curve, replayed, WEIGHTS, {0: 2.5, 2: 2.0})


def test_race_targets_the_baselines_final_point_within_its_budget():
    # re-timed, the baseline's last "improvement" was slower (8.5) than its point at 200 s (8)
    base = [[10, 100.0, 9.0], [20, 200.0, 8.0], [30, 300.0, 8.5], [40, 400.0, 7.0]]
    cell = [[5, 20.0, 9.0], [10, 50.0, 8.4]]
    got = race(base, cell, budget=30)  # trial 40 lies past the budget
    assert got == {"target_ms": 8.5, "base_s": 200.0, "cell_s": 50.0, "speedup": 4.0,
                   "base_stays_s": 200.0, "cell_stays_s": 50.0, "stays_speedup": 4.0,
                   "cell_final_ms": 8.4}
    never = race(base, [[5, 20.0, 9.0]], budget=30)
    assert never["cell_s"] is None and never["speedup"] is None
    # the cell dips below the target at 50 s, rises above it, and settles below it at 80 s
    dips = race(base, [[5, 20.0, 9.0], [10, 50.0, 8.0], [15, 60.0, 8.7], [20, 80.0, 8.2]], 30)
    assert (dips["speedup"], dips["cell_stays_s"], dips["stays_speedup"]) == (4.0, 80.0, 2.5)
    ends_above = race(base, [[5, 20.0, 8.0], [10, 50.0, 8.6]], 30)
    assert ends_above["speedup"] == 10.0 and ends_above["stays_speedup"] is None


def test_side_by_side_order_takes_heavy_tasks_first_and_alternates_the_cells():
    programs = [("base", "t1", 0), ("cell", "t1", 5), ("cell", "t1", 6), ("base", "t2", 1),
                ("cell", "t2", 7)]
    assert side_by_side_order(programs, {"t2": 10.0, "t1": 1.0}) == [3, 4, 0, 1, 2]


def test_time_side_by_side_reverses_every_other_round():
    orders = []

    def measure(order):
        orders.append(list(order))
        # program 2 always fails; the others read their index + the round
        return [None if i == 2 else i + len(orders) for i in order]

    got = time_side_by_side(3, [0, 1, 2], 3, measure, report=lambda line: None)
    assert orders == [[0, 1, 2], [2, 1, 0], [0, 1, 2]]
    assert got == {0: [1, 2, 3], 1: [2, 3, 4]}  # program 2 failed every round: left out


def test_table_rows_rank_a_never_below_every_speedup():
    def result(recorded, retimed, final):
        kept = None if retimed is None else 100.0 / retimed
        return {"rounds_spread": 1.05,
                "recorded": {"target_ms": 10.0, "base_s": 100.0, "cell_s": 50.0,
                             "speedup": recorded, "cell_final_ms": 9.0},
                "retimed": {"target_ms": 10.0, "base_s": 100.0, "cell_s": kept,
                            "speedup": retimed, "base_stays_s": 100.0, "cell_stays_s": kept,
                            "stays_speedup": retimed, "cell_final_ms": final}}

    rows = table_rows({0: result(2.0, None, 11.0), 1: result(4.0, 5.0, 9.0),
                       2: result(6.0, None, 10.0)})
    assert rows[0] == ["0", "10.00 (100)", "50", "2.00x", "10.00 (100)", "never", "never",
                       "100, never", "never", "1.100", "1.050"]
    assert rows[1][5:9] == ["20", "5.00x", "100, 20", "5.00x"]
    assert rows[-1] == ["median", "", "", "4.00 (2.00-6.00)", "", "", "never (5.00) [2 never]",
                        "", "never (5.00) [2 never]", "1.000", "1.050"]


def cell(variant, seed, hardware="cpu-x"):
    return {"network": "n", "variant": variant, "seed": seed, "hardware": hardware}


def test_seed_pairs_pairs_each_seed_with_its_baseline_and_refuses_what_is_not_there():
    cells = [cell("ms-xgb", 0), cell("learned", 0), cell("ms-xgb", 1)]
    assert seed_pairs(cells, "learned", [0], "cpu-x") == {
        0: {"base": cells[0], "cell": cells[1]}}
    with pytest.raises(SystemExit, match="seed 1: no cell of learned"):
        seed_pairs(cells, "learned", [1], "cpu-x")
    with pytest.raises(SystemExit, match="ran on cpu-x, this machine is cpu-y"):
        seed_pairs(cells, "learned", [0], "cpu-y")


@pytest.mark.parametrize("argv, message", [
    (["--seeds", "0,x"], "expected comma-separated integers"),
    (["--seeds", "0", "--processes", "0"], "expected 1 or more"),
    (["--seeds", "0"], "no cells of n in"),
])
def test_bad_input_is_a_one_line_error(tmp_path, argv, message):
    with pytest.raises(SystemExit, match=message):
        main(["--out", str(tmp_path), "--work", str(tmp_path), "--network", "n", *argv])
