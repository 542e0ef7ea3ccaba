"""Model-only evolution: children of a task's best samples, scored by a model, none measured."""

import numpy as np

from tasks.model_evolution import Scored, evolve
from tasks.sampling import FEATURE_DIM, apply_trace, sample_candidates
from tasks.schedule_transfer import signature, source_steps
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET


def _innermost_tiles(candidate) -> float:
    """A stand-in model that likes large innermost tiles: something evolution can climb."""
    return float(sum(np.log(d[-1]) for kind, _, d in source_steps(candidate.trace_json)
                     if kind == "SamplePerfectTile"))


def _score(candidates):
    return np.array([_innermost_tiles(c) for c in candidates])


def test_children_are_valid_new_programs_and_climb_the_models_score():
    from tvm.s_tir.meta_schedule.utils import shash2hex

    task = extract_network_tasks("matmul", 1, 64, LOCAL_TARGET)[0]
    sampled, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 16, seed=3)
    parents = [Scored(c, s) for c, s in zip(sampled, _score(sampled))]
    children = evolve(task.mod_json, LOCAL_TARGET, parents, _score, seed=0, generations=3,
                      children=12, keep=4)
    assert children and len({c.candidate.schedule_hash for c in children}) == len(children)
    assert not {c.candidate.schedule_hash for c in children} & {c.schedule_hash for c in sampled}
    spaces = {signature(source_steps(c.trace_json)) for c in sampled}
    for child in children:
        assert child.candidate.features.shape[1] == FEATURE_DIM
        assert child.score == _innermost_tiles(child.candidate)
        # a child is a program of the task's own design space, as stored
        assert signature(source_steps(child.candidate.trace_json)) in spaces
        assert shash2hex(apply_trace(task.mod_json, child.candidate.trace_json)) \
            == child.candidate.schedule_hash
    assert [c.score for c in children] == sorted((c.score for c in children), reverse=True)
    # selection works: the best child beats the best sampled parent on the model's score
    assert children[0].score > max(p.score for p in parents)


def test_a_child_differs_from_some_parent_in_one_decision_only():
    task = extract_network_tasks("matmul", 1, 64, LOCAL_TARGET)[0]
    sampled, _ = sample_candidates(task.mod_json, LOCAL_TARGET, 8, seed=5)
    parents = [Scored(c, 0.0) for c in sampled]
    # one generation: every child's parent is a sampled candidate
    children = evolve(task.mod_json, LOCAL_TARGET, parents, lambda cs: np.zeros(len(cs)),
                      seed=1, generations=1, children=8)
    assert children
    parent_steps = [[d for _, _, d in source_steps(p.trace_json)] for p in sampled]
    for child in children:
        steps = [d for _, _, d in source_steps(child.candidate.trace_json)]
        assert min(sum(a != b for a, b in zip(steps, p)) for p in parent_steps
                   if len(p) == len(steps)) == 1
