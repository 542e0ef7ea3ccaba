"""bench/same_candidates.py: two profiles' times of the same schedules, as a ratio and as
per-task rank agreement."""

import numpy as np
import pytest

from bench.same_candidates import compare, main, ranks, spearman


def test_ties_share_their_mean_rank():
    assert ranks(np.array([3.0, 1.0, 3.0, 2.0])).tolist() == [2.5, 0.0, 2.5, 1.0]


def test_a_constant_ratio_ranks_alike_and_a_reversed_order_does_not():
    times = np.linspace(1, 2, 12)
    alike = [("t", 2 * t, t) for t in times]
    c = compare(alike)
    assert c["ratio"] == pytest.approx([2, 2, 2]) and c["spearman"][0] == pytest.approx(1.0)
    assert c["same_best"] == 1 and c["ranked_tasks"] == 1
    reversed_ = [("t", a, b) for a, b in zip(times, times[::-1])]
    assert compare(reversed_)["spearman"][0] == pytest.approx(-1.0)
    assert compare(reversed_)["same_best"] == 0
    assert spearman(np.ones(4), times[:4]) != spearman(np.ones(4), times[:4])  # nan: no order


def test_tasks_with_too_few_pairs_are_not_ranked():
    few = [("t", 1.0, 1.0), ("t", 2.0, 2.0)]
    c = compare(few, min_pairs=10)
    assert c["pairs"] == 2 and c["tasks"] == 1 and c["ranked_tasks"] == 0
    assert "spearman" not in c
    assert compare([]) == {"pairs": 0, "tasks": 0}


def test_a_missing_store_or_profile_is_refused_in_one_line(tmp_path):
    with pytest.raises(SystemExit, match="no store at"):
        main(["--db", str(tmp_path / "none.duckdb"), "--a", "x", "--b", "y"])
    import duckdb

    db = tmp_path / "s.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE hardware (name VARCHAR)")
    con.execute("INSERT INTO hardware VALUES ('cpu-a')")
    con.close()
    with pytest.raises(SystemExit, match="profile 'cpu-b' is not in .*stored: cpu-a"):
        main(["--db", str(db), "--a", "cpu-a", "--b", "cpu-b"])
