"""Sampling: distinct, valid, seeded candidates with per-store features."""

import json

import numpy as np

from tasks.sampling import FEATURE_DIM, apply_trace, sample_candidates, sample_tasks
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


def test_tasks_sampled_on_threads_get_the_candidates_one_call_each_gives():
    tasks = [t for t in extract_network_tasks("mlp", 1, 16, LOCAL_TARGET)
             if not t.task_name.startswith("transpose")][:3] + [_matmul()]
    requests = [(t.mod_json, LOCAL_TARGET, 6, 7 + i) for i, t in enumerate(tasks)]
    alone = [sample_candidates(*r) for r in requests]
    threaded = sample_tasks(requests, threads=3)
    assert len(threaded) == len(requests)
    for (want, want_invalid), (got, got_invalid) in zip(alone, threaded):
        assert want_invalid == got_invalid and len(want) == len(got) > 0
        for a, b in zip(want, got):
            assert (a.schedule_hash, a.trace_json, a.sample_seed) == \
                (b.schedule_hash, b.trace_json, b.sample_seed)
            assert np.array_equal(a.features, b.features)
    # a deadline passed: the tasks not begun are None, nothing is sampled
    assert sample_tasks(requests, threads=2, should_stop=lambda: True) == [None] * len(requests)


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


def test_sampled_draws_and_trace_text_match_tvms_own_slow_path():
    # Sampling copies one fresh schedule per attempt and serializes traces through TVM's JSON
    # graph (both for speed); the candidates must be what a schedule constructed with the
    # attempt's seed draws, and the text what json.dumps(as_json()) writes, byte for byte.
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import shash2hex
    from tvm.target import Target

    from core.tvm_env import load_tvm, to_plain_json

    task = _matmul()
    tvm = load_tvm(LOCAL_TARGET)
    mod = tvm.ir.load_json(task.mod_json)
    context = ms.TuneContext(mod, target=Target(LOCAL_TARGET), space_generator="post-order-apply",
                             task_name="t", num_threads=1)
    spaces = [s.trace.simplified(remove_postproc=True) for s in context.generate_design_space()]
    cands, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 6, seed=5)
    for cand in cands:
        sch = s_tir.Schedule(mod, seed=cand.sample_seed)
        spaces[cand.design_space].apply_to_schedule(sch, remove_postproc=True,
                                                    decision_provider=lambda *_: None)
        sch.enter_postproc()
        assert all(p.apply(sch) for p in context.space_generator.postprocs)
        assert shash2hex(sch.mod) == cand.schedule_hash
        replayed = s_tir.Schedule(mod)
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(cand.trace_json), replayed)
        assert cand.trace_json == json.dumps(to_plain_json(replayed.trace.as_json()))


def test_trace_text_of_a_layout_rewrite_takes_the_slow_path_and_agrees():
    # An IndexMap in a trace is a node kind the fast pass does not convert.
    from tvm import s_tir

    from core.tvm_env import load_tvm, to_plain_json, trace_json

    tvm = load_tvm(LOCAL_TARGET)
    sch = s_tir.Schedule(tvm.ir.load_json(_matmul().mod_json))
    block = sch.get_child_blocks(sch.get_sblock("root"))[0]
    sch.transform_layout(block, ("read", 0), lambda i, j: (j, i))
    assert "IndexMap" in str(sch.trace) or "transform_layout" in str(sch.trace).lower()
    assert trace_json(sch.trace) == json.dumps(to_plain_json(sch.trace.as_json()))
