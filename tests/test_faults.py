"""bench/faults.py's checks, CI-sized: a few random SIGKILLs of a collect lose and duplicate
nothing, and every bad input of the table is refused in one line with exit 2."""

import random

import pytest

from bench.faults import check_bad_inputs, cli, collect_args, kill_loop, store_state


@pytest.mark.slow
def test_random_kills_lose_nothing(tmp_path):
    db = str(tmp_path / "killed.duckdb")
    totals = kill_loop(db, kills=3, candidates=8, rng=random.Random(1), delays=(4.0, 20.0))
    assert totals == {"lost": 0, "duplicates": 0, "inconsistent": 0}
    final = cli(*collect_args(db, 8))
    assert final.returncode == 0, final.stderr[-2000:]
    state = store_state(db)
    assert state["duplicates"] == 0 and state["partial"] == 0
    assert len({c for c, _ in state["measured"]}) == state["candidates"] > 0


@pytest.mark.slow
def test_every_bad_input_is_refused_cleanly(tmp_path):
    tried, failures = check_bad_inputs(tmp_path)
    assert tried >= 30
    assert failures == []
