"""tasks/asm_rerank.py with doubles: which picks it builds, how it orders them, what it refuses.
The real builds: tests/tasks/test_measure.py (Measurer.build_asm)."""

from types import SimpleNamespace

import numpy as np
import pytest

import tasks.asm_rerank as asm_rerank
from core.errors import TenforgeError
from models.asm_features import ASM_DIM


class _Builds:
    """Measurer.build_asm's double: column 0 is the value `speed` gives the candidate's trace,
    None (a failed build) where it gives None; remembers what it was asked to build."""

    def __init__(self, speed):
        self.speed, self.asked = speed, []

    def build_asm(self, jobs):
        names = [_name(j.trace_json) for j in jobs]
        self.asked.append([(j.candidate_id, n) for j, n in zip(jobs, names)])
        return [None if self.speed[n] is None else (self.speed[n],) + (0.0,) * (ASM_DIM - 1)
                for n in names]


NAMES = "abcdefx"


def _trace(name):
    """An empty trace (what the trace summary reads), told apart by its trailing spaces."""
    return "[[], []]" + " " * NAMES.index(name)


def _name(trace):
    return NAMES[len(trace) - len("[[], []]")]


def _candidates(names):
    return [SimpleNamespace(schedule_hash=f"h-{n}", trace_json=_trace(n),
                            features=np.zeros((1, 164), np.float32)) for n in names]


def _reranker(monkeypatch, speed, pool):
    model = SimpleNamespace(predict=lambda data: data.asm[:, 0], takes_asm=True)
    monkeypatch.setattr(asm_rerank, "checked_rerank_model", lambda rerank, profile: model)
    profile = SimpleNamespace(name="cpu-x", feature_vector=lambda: [0.0])
    builds = _Builds(speed)
    return asm_rerank.AsmReranker(asm_rerank.Rerank("m", pool=pool), profile, builds), builds


def test_the_top_pool_is_ordered_by_the_asm_model_failed_builds_last_the_rest_untouched(
        monkeypatch):
    speed = {"a": 1.0, "b": None, "c": 3.0, "d": 2.0, "e": 9.0, "f": 8.0}
    reranker, builds = _reranker(monkeypatch, speed, pool=4)
    order = reranker.order("{}", "w", 1e6, _candidates("abcdef"))
    # a-d built; c, d, a by the model's score, b (no build) last; e, f never built, in place
    assert order == [2, 3, 0, 1, 4, 5]
    assert [t for _, t in builds.asked[0]] == ["a", "b", "c", "d"]
    ids = [i for i, _ in builds.asked[0]]
    assert all(i < 0 for i in ids) and len(set(ids)) == 4  # never the tuner's own ids (>= 0)
    assert (reranker.built, reranker.failed) == (4, 1)


def test_a_candidate_ranked_again_is_not_built_again(monkeypatch):
    speed = {"a": 1.0, "b": 5.0, "c": 3.0, "x": 4.0}
    reranker, builds = _reranker(monkeypatch, speed, pool=3)
    reranker.order("{}", "w", 1e6, _candidates("abc"))
    # the second pass's pool: a fresh draw's x among the first pass's leftovers
    assert reranker.order("{}", "w", 1e6, _candidates("xca")) == [0, 1, 2]
    assert [[t for _, t in asked] for asked in builds.asked] == [["a", "b", "c"], ["x"]]
    first, second = builds.asked
    assert not {i for i, _ in first} & {i for i, _ in second}  # build ids stay distinct


def test_a_model_that_does_not_fit_is_refused_in_one_line(monkeypatch):
    import models.registry as registry

    x86 = SimpleNamespace(name="cpu-x", x86_cpu=True, target_kind="llvm", arch="x86_64")
    gpu = SimpleNamespace(name="gpu-h100", x86_cpu=False, target_kind="cuda", arch="sm_90")
    rerank = asm_rerank.Rerank("m")
    with pytest.raises(TenforgeError, match="x86 assembly; 'gpu-h100' is a cuda/sm_90"):
        asm_rerank.checked_rerank_model(rerank, gpu)
    with pytest.raises(TenforgeError, match="re-rank pool 1: give at least 2"):
        asm_rerank.checked_rerank_model(asm_rerank.Rerank("m", pool=1), x86)
    with pytest.raises(TenforgeError, match=r"re-rank FLOPs share 0: give a share .* \(0, 1\]"):
        asm_rerank.checked_rerank_model(asm_rerank.Rerank("m", flops_share=0), x86)
    monkeypatch.setattr(registry, "load_model", lambda path: SimpleNamespace(takes_asm=False))
    with pytest.raises(TenforgeError, match="does not read the asm columns"):
        asm_rerank.checked_rerank_model(rerank, x86)
    asm_model = SimpleNamespace(takes_asm=True)
    monkeypatch.setattr(registry, "load_model", lambda path: asm_model)
    assert asm_rerank.checked_rerank_model(rerank, x86) is asm_model


def test_only_the_tasks_carrying_the_share_are_re_ranked():
    import tasks.instant as instant

    def state(name, flops, weight):
        return instant._TaskState(0, SimpleNamespace(task_name=name, weight=weight), "{}", flops)

    states = [state("conv", 60.0, 1), state("dense", 10.0, 3), state("add", 1.0, 1),
              state("reshape", 0.0, 1)]
    assert instant._heaviest(states, 0.9) == [0, 1]  # 60 + 30 of 91
    assert instant._heaviest(states, 1.0) == [0, 1, 2, 3]
    # a task left out keeps the first model's order, and nothing of it is built
    profile = SimpleNamespace(name="cpu-x", feature_vector=lambda: [0.0])
    tuner = instant._Tuner(None, profile, None, None, None, None, lambda line: None)
    tuner.reranker = SimpleNamespace(order=lambda *args: pytest.fail("built for a light task"))
    ranked = [instant._Ranked(c, 1.0) for c in _candidates("ab")]
    assert tuner.rerank(states[2], ranked) == ranked
