"""Model-only evolution: better candidates of a task before anything of it is measured.

A warm start ranks random samples of a task's design space and measures the model's top few;
on mobilenet_v2 those picks ran 1.5-2.6x slower than the search's final bests, and the model's
top 4 of 128 samples were about as fast as the best of 32 random ones (docs/tuning-results.md,
thirty-fourth session). The search closes that gap by evolution: it mutates its best programs
and lets the cost model choose which children to measure. This does the same with no
measurement at all: the model's best samples are parents; a child replays a parent's sampled
decisions (tile sizes, unroll steps, compute locations) with one of them drawn afresh, as
MetaSchedule's mutators do; the postprocessors validate it as they do any sample; the model
scores the children, and the best of parents and children breed the next generation.

Whether the model's scores hold up on programs it chose itself (rather than on random ones,
what it was trained on) is the question: bench/warm_start_pools.py measures the evolved pool
beside the sampled one. Measured on mobilenet_v2 (docs/tuning-results.md, thirty-fifth
session): they do. 8 generations of 64 put the warm pick of five heavy convolutions at 1.37x
the search's final best against 2.06x for the model's top 4 of 128 samples (two seeds alike).
But a child costs ~21 ms (postprocessors, features, predict), as a sample does, and the
warm start with 4 x 32 on every task reached XGB's final later than without it (seed 0:
1.99x and 2.99x from 128 and 64 samples, against 3.60x): the search's own evolution, with
measurements behind it, does the same work sooner. So it is a bench variant
(warm-focus-pop4-w128-evo, -w64-evo), off by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from tasks.sampling import Candidate, apply_space, as_candidates, attempt_seed, design_spaces
from tasks.schedule_transfer import SAMPLE_KINDS, source_steps

GENERATIONS = 4
CHILDREN = 32  # per generation: 4 x 32 took ~2.7 s a mobilenet_v2 convolution on the VM
PARENTS = 16  # the best this many (parents and children alike) breed the next generation


@dataclass(frozen=True)
class Scored:
    candidate: Candidate
    score: float


def evolve(mod_json: str, target: dict, parents: Sequence[Scored],
           score: Callable[[list[Candidate]], np.ndarray], seed: int,
           generations: int = GENERATIONS, children: int = CHILDREN, keep: int = PARENTS,
           known_hashes: set[str] = frozenset()) -> list[Scored]:
    """Children of `parents` (sampled candidates of the task `mod_json`, with the model's
    scores) over `generations`, each generation `children` new distinct valid ones scored by
    `score`; the best `keep` of everything so far are the next parents. Returns the children,
    best first (none whose hash is a parent's or in `known_hashes`)."""
    context, spaces, fresh = design_spaces(mod_json, target, attempt_seed(seed, 0))  # loads TVM
    from tvm.s_tir.meta_schedule.utils import shash2hex

    postprocs = context.space_generator.postprocs
    rng = np.random.default_rng(seed)
    seen = set(known_hashes) | {p.candidate.schedule_hash for p in parents}
    pool = sorted(parents, key=lambda p: -p.score)[:keep]
    born: list[Scored] = []
    attempt = 0
    for _ in range(generations):
        if not pool:
            break
        found: list[tuple[str, Any, int, int]] = []
        tries = 0
        while len(found) < children and tries < children * 4:
            tries += 1
            attempt += 1
            # the better a parent ranks, the more children it has (a third of them from the
            # best eighth of the pool, as this exponential rank draw gives)
            parent = pool[min(int(rng.exponential(len(pool) / 3)), len(pool) - 1)].candidate
            steps = source_steps(parent.trace_json)
            if not steps:
                continue
            sch_seed = attempt_seed(seed + 1, attempt)
            sch = fresh.copy()
            sch.seed(sch_seed)
            redraw = int(rng.integers(len(steps)))
            if not apply_space(spaces[parent.design_space], sch, postprocs,
                               _mutating_provider(steps, redraw)):
                continue
            schedule_hash = shash2hex(sch.mod)
            if schedule_hash in seen:
                continue
            seen.add(schedule_hash)
            found.append((schedule_hash, sch, parent.design_space, sch_seed))
        if not found:
            break
        generation = as_candidates(context, found)
        scores = score(generation)
        scored = [Scored(c, float(s)) for c, s in zip(generation, scores)]
        born += scored
        pool = sorted(pool + scored, key=lambda p: -p.score)[:keep]
    return sorted(born, key=lambda p: -p.score)


def _mutating_provider(steps: Sequence[tuple[str, str, Any]], redraw: int):
    """A decision provider replaying `steps`' decisions in order, except the `redraw`-th,
    which it leaves to the schedule's random state (None: TVM samples it anew)."""
    position = iter(range(len(steps)))

    def provide(inst: Any, inputs: Sequence[Any], attrs: Sequence[Any], decision: Any) -> Any:
        if inst.kind.name not in SAMPLE_KINDS:
            return decision
        index = next(position, None)
        if index is None or index == redraw:
            return None
        return steps[index][2]

    return provide
