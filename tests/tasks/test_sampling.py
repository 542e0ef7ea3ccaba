"""Sampling: distinct, valid, seeded candidates with per-store features."""

import json

from tasks.sampling import FEATURE_DIM, apply_trace, sample_candidates
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET


def _matmul():
    return extract_network_tasks("matmul", 1, 64, LOCAL_TARGET)[0]


def test_same_seed_same_candidates_and_more_extends_them():
    task = _matmul()
    first, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 6, seed=3)
    again, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 6, seed=3)
    other, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 6, seed=4)
    assert [c.schedule_hash for c in first] == [c.schedule_hash for c in again]
    assert [c.schedule_hash for c in first] != [c.schedule_hash for c in other]
    more, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 9, seed=3,
                                known_hashes=[c.schedule_hash for c in first])
    assert len(more) == 3
    assert not {c.schedule_hash for c in more} & {c.schedule_hash for c in first}


def test_extending_past_the_give_up_window_still_finds_new_candidates():
    # Regression: re-deriving the stored candidates used to count as "nothing new", so a task
    # with `give_up_after` stored candidates could never be extended (the seed's 128 pass
    # sampled nothing).
    task = _matmul()
    first, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 6, seed=3, give_up_after=4)
    assert len(first) == 6
    more, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 10, seed=3, give_up_after=4,
                                known_hashes=[c.schedule_hash for c in first])
    assert len(more) == 4
    assert not {c.schedule_hash for c in more} & {c.schedule_hash for c in first}


def test_candidates_are_distinct_replayable_and_featurized():
    from tvm.s_tir.meta_schedule.utils import shash2hex

    task = _matmul()
    cands, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 8, seed=0)
    assert len(cands) == 8 and len({c.schedule_hash for c in cands}) == 8
    for cand in cands:
        assert cand.features.shape[1] == FEATURE_DIM and cand.features.shape[0] >= 1
        assert shash2hex(apply_trace(task.mod_json, cand.trace_json)) == cand.schedule_hash
        json.loads(cand.trace_json)


def test_a_small_design_space_yields_what_it_has():
    transpose = [t for t in extract_network_tasks("mlp", 1, 16, LOCAL_TARGET)
                 if t.task_name.startswith("transpose")][0]
    cands, _ = sample_candidates(transpose.mod_json, LOCAL_TARGET, 50, seed=0)
    assert 1 <= len(cands) < 50
