"""bench/faults.py's checks, CI-sized: a few random SIGKILLs of a collect lose and duplicate
nothing; a search killed mid-trial and a killed pretrain leave the study and the model registry
consistent; every bad input of the table is refused in one line with exit 2."""

import random
import shutil

import pytest

from bench._faults_common import cli
from bench.bad_inputs import check_bad_inputs
from bench.fault_kills import (
    collect_args,
    kill_during_trials,
    kill_loop,
    kill_pretrain,
    store_state,
)
from tests.conftest import shared_prefect_api

KILLED_SEARCH_PROFILE = "cpu-znver4-avx512-1t"  # a seed profile (data any machine can read)


@pytest.fixture(autouse=True)
def _shared_api(monkeypatch):
    """bench's `cli` runs `tenforge` with this process's environment: point its flows at the
    test process's Prefect server too (tests/conftest.py)."""
    monkeypatch.setenv("PREFECT_API_URL", shared_prefect_api())


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


@pytest.mark.slow
def test_a_search_killed_mid_trial_fails_that_trial_and_runs_it_again(seed_store, tmp_path):
    db = str(tmp_path / "search.duckdb")
    shutil.copy(seed_store, db)
    # one seed profile's rows (4.8k) instead of every profile's (21k): trials of a few seconds,
    # still longer than the kill's 0-2 s offset into one; the test went from ~95 s to ~35 s
    result = kill_during_trials(db, kills=1, trials=2, rng=random.Random(2),
                                hardware=KILLED_SEARCH_PROFILE)
    assert result == {"exit": 0, "kills_in_a_trial": 1, "interrupted": 1, "still_running": 0,
                      "counted": 2, "not_copied": 0, "models": 1, "unloadable": 0}


@pytest.mark.slow
def test_a_killed_pretrain_never_leaves_an_unloadable_model(seed_store, tmp_path):
    db = str(tmp_path / "pretrain.duckdb")
    shutil.copy(seed_store, db)
    result = kill_pretrain(db, kills=1, rng=random.Random(3))
    assert result["exit"] == 0 and result["unloadable"] == 0 and result["models"] >= 1
