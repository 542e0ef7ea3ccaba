"""Schedule transfer: another task's schedule replayed on a new task's design space."""

import json
import math

import pytest

from tasks.sampling import FEATURE_DIM, apply_trace, sample_candidates
from tasks.schedule_transfer import (
    SourceSchedule,
    load_library,
    project_tile,
    signature,
    source_steps,
    transfer_candidates,
)
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET, SMALL_SEED_PROFILE


@pytest.mark.parametrize("extent, factors, limit, expected", [
    (56, [7, 1, 2, 4], 64, [7, 1, 2, 4]),  # the same extent: the same tiles
    (28, [7, 1, 2, 4], 64, [7, 1, 1, 4]),  # 28 / 4 = 7 takes no 2: the outer loop keeps it
    (64, [1, 1, 1, 96], 16, [4, 1, 1, 16]),  # the innermost stays within its limit
    (7, [1, 2, 2, 2], 64, [7, 1, 1, 1]),  # a prime extent: 1 is nearer 2 than 7 is
])
def test_a_tile_is_projected_onto_the_new_extent_innermost_first(extent, factors, limit,
                                                                  expected):
    got = project_tile(extent, factors, limit)
    assert got == expected and math.prod(got) == extent


def _matmul(size: int):
    return extract_network_tasks("matmul", 1, size, LOCAL_TARGET)[0]


def _sources(task, count: int) -> list[SourceSchedule]:
    sampled, _ = sample_candidates(task.mod_json, LOCAL_TARGET, count, seed=1)
    return [SourceSchedule("w", task.task_name, 2.0 * 32**3, c.trace_json, 1e-3 * (i + 1))
            for i, c in enumerate(sampled)]


def test_another_shapes_schedules_become_valid_distinct_candidates_of_the_new_task():
    from tvm.s_tir.meta_schedule.utils import shash2hex

    target = _matmul(64)
    sources = _sources(_matmul(32), 12)
    got = transfer_candidates(target.mod_json, LOCAL_TARGET, sources, 2.0 * 64**3, limit=8)
    assert 1 <= len(got) <= 8 and len({c.schedule_hash for c in got}) == len(got)
    for cand in got:
        assert cand.features.shape[1] == FEATURE_DIM
        # the trace replays on the new task as stored (tiles that multiply to its extents)
        assert shash2hex(apply_trace(target.mod_json, cand.trace_json)) == cand.schedule_hash
    # what the caller has already drawn is not made again
    again = transfer_candidates(target.mod_json, LOCAL_TARGET, sources, 2.0 * 64**3, limit=8,
                                known_hashes={c.schedule_hash for c in got})
    assert not {c.schedule_hash for c in again} & {c.schedule_hash for c in got}


def test_a_source_of_other_schedule_rules_lends_nothing():
    transpose = [t for t in extract_network_tasks("mlp", 1, 16, LOCAL_TARGET)
                 if t.task_name.startswith("transpose")][0]
    matmul_sources = _sources(_matmul(32), 4)
    assert signature(source_steps(matmul_sources[0].trace_json)) != ()
    assert transfer_candidates(transpose.mod_json, LOCAL_TARGET, matmul_sources, 1.0,
                               limit=8) == []


def test_the_library_holds_each_tasks_fastest_schedules_but_none_of_excluded_networks(
        seed_store):
    from storage.store import Store

    with Store(seed_store, read_only=True) as store:
        everything = load_library(store, SMALL_SEED_PROFILE, per_task=2)
        without = load_library(store, SMALL_SEED_PROFILE, ["resnet18"], per_task=2)
        excluded = {h for (h,) in store.query(
            "SELECT t.workload_hash FROM tasks t JOIN network_tasks nt USING (task_id) "
            "JOIN networks n USING (network_id) WHERE n.name = 'resnet18' "
            "OR starts_with(n.name, 'resnet18+')")}
        fastest = {(w, t): s for w, t, s in store.query(
            "SELECT t.workload_hash, c.trace_json, min(m.mean_latency_s) FROM measurements m "
            "JOIN candidates c USING (candidate_id) JOIN tasks t USING (task_id) JOIN hardware h "
            "USING (hardware_id) WHERE h.name = ? AND m.error_kind IS NULL GROUP BY ALL",
            [SMALL_SEED_PROFILE])}
    assert excluded and len(without) < len(everything)
    assert not {s.workload_hash for s in without} & excluded
    assert {s.workload_hash for s in everything} & excluded
    for source in everything:
        json.loads(source.trace_json)
        assert source.latency_s == pytest.approx(
            fastest[source.workload_hash, source.trace_json])
    # at most two a task, the faster first
    by_task: dict[str, list[float]] = {}
    for source in everything:
        by_task.setdefault(source.workload_hash, []).append(source.latency_s)
    assert all(len(v) <= 2 and v == sorted(v) for v in by_task.values())
