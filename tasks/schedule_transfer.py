"""Schedule transfer: a new task's candidates made from the best schedules of similar tasks.

A warm start ranks random samples of a task's design space; on mobilenet_v2 its picks ended
30-50% above the search's final bests (docs/tuning-results.md). The store already holds, for
this hardware, the fastest measured schedules of hundreds of other tasks. Tasks that come from
the same schedule rules (a convolution and another convolution of other shapes) have design
spaces with the same instructions in the same order; only the sampled decisions differ: tile
sizes, the unroll step, compute locations. So a source schedule's decisions can be replayed on
the new task's design space, each one adapted where the shapes differ (a tile split projected
onto the new loop's extent), and the postprocessors validate the result as for any sample.
This is the idea of transfer-tuning (Gibson and Cano, PACT 2022, with Ansor's schedules); here
the transferred programs join the random ones and the cost model ranks them all, so a poor
transfer costs nothing but a rank.

Measured on mobilenet_v2 (docs/tuning-results.md, thirty-fourth session): transfers are a
better pool on the median (1.9-3.1x faster than random samples) but not at the top, and a warm
start that ranks them beside its samples reached the same latencies no sooner, from random
sources and from efficientnet_b0's tuned ones alike. So it is a bench variant
(warm-focus-pop4-w128-xfer), not a retune default.

Sources are matched by their sampling signature (the kinds and arguments of the design
space's Sample* instructions, in order) and, among the compatible ones, the nearest in FLOPs
come first. Which networks may lend schedules is the caller's choice (a benchmark holds its
held-out networks out, as their models do).
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any, Sequence

from tasks.sampling import Candidate, apply_space, as_candidates, design_spaces

SAMPLE_KINDS = ("SamplePerfectTile", "SampleCategorical", "SampleComputeLocation")
PER_TASK = 4  # a source task's fastest schedules the library keeps


@dataclass(frozen=True)
class SourceSchedule:
    """A measured schedule of another task: its trace and how fast it ran."""
    workload_hash: str  # the task it was measured on
    task_name: str
    flops: float
    trace_json: str
    latency_s: float


def load_library(store: Any, hardware: str, exclude_networks: Sequence[str] = (),
                 per_task: int = PER_TASK) -> list[SourceSchedule]:
    """The fastest `per_task` measured schedules of every task the store holds for `hardware`
    (a profile's own: a schedule's speed is a fact of the machine it ran on), the tasks of
    `exclude_networks` (any graph of them) left out."""
    from storage.queries import fastest_schedules

    return [SourceSchedule(*row) for row in fastest_schedules(store, hardware, per_task,
                                                              exclude_networks)]


def sampling_steps(trace: Sequence[Sequence[Any]],
                   decisions: dict[int, Any] | None = None) -> list[tuple[str, str, Any]]:
    """(kind, signature, decision) of each Sample* instruction before the postprocessors, in
    order; `trace` is a trace JSON's instruction list. A tile's signature is its split count
    and innermost limit; a categorical's, its choices."""
    steps = []
    for index, (kind, _inputs, attrs, _outputs) in enumerate(trace):
        if kind == "EnterPostproc":
            break
        if kind in SAMPLE_KINDS:
            decision = None if decisions is None else decisions.get(index)
            steps.append((kind, json.dumps(attrs[0] if kind == "SampleCategorical" else attrs),
                          decision))
    return steps


def signature(steps: Sequence[tuple[str, str, Any]]) -> tuple[tuple[str, str], ...]:
    return tuple((kind, sig) for kind, sig, _ in steps)


@functools.lru_cache(maxsize=8192)
def source_steps(trace_json: str) -> tuple[tuple[str, str, Any], ...]:
    """A stored trace's sampling steps (cached: every task of a network scans the library)."""
    insts, decisions = json.loads(trace_json)
    return tuple(sampling_steps(insts, {int(i): d for i, d in decisions}))


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def project_tile(extent: int, factors: Sequence[int], max_innermost: int) -> list[int]:
    """`factors` (a tiling of another loop) adapted to a loop of `extent`: innermost first,
    each factor becomes the divisor of what is left nearest to it in ratio (the innermost
    also at most `max_innermost`, MetaSchedule's limit), and the outermost takes the rest.
    The inner tiles (register blocking, the vector) are what a schedule's speed hangs on, so
    they are the ones kept closest."""
    left = extent
    inner: list[int] = []
    for position, factor in enumerate(reversed(factors[1:])):
        choices = [d for d in _divisors(left)
                   if position > 0 or max_innermost <= 0 or d <= max_innermost]
        best = min(choices, key=lambda d: (abs(math.log(d) - math.log(max(factor, 1))), d))
        inner.append(best)
        left //= best
    return [left] + inner[::-1]


def transfer_candidates(mod_json: str, target: dict, sources: Sequence[SourceSchedule],
                        flops: float, limit: int, known_hashes: set[str] = frozenset(),
                        ) -> list[Candidate]:
    """Up to `limit` distinct valid candidates of the task `mod_json` made from `sources`
    (those whose sampling signature one of its design spaces has, nearest in FLOPs first,
    fastest first within a task); none whose schedule hash is in `known_hashes`."""
    from core.tvm_env import trace_json

    context, spaces, fresh = design_spaces(mod_json, target, rand_state=1)  # loads TVM
    from tvm.s_tir.meta_schedule.utils import shash2hex

    by_signature = {}
    for index, space in enumerate(spaces):
        steps = sampling_steps(json.loads(trace_json(space))[0])
        by_signature.setdefault(signature(steps), index)
    ordered = sorted(sources, key=lambda s: (abs(math.log(max(s.flops, 1.0))
                                                 - math.log(max(flops, 1.0))), s.latency_s))
    postprocs = context.space_generator.postprocs
    found: list[tuple[str, Any, int, int]] = []
    seen = set(known_hashes)
    for source in ordered:
        if len(found) >= limit:
            break
        steps = source_steps(source.trace_json)
        space_index = by_signature.get(signature(steps))
        if space_index is None:
            continue
        sch = fresh.copy()
        sch.seed(1)
        # (False: an adapted decision the new task cannot take)
        if not apply_space(spaces[space_index], sch, postprocs, _provider(sch, steps)):
            continue
        schedule_hash = shash2hex(sch.mod)
        if schedule_hash in seen:
            continue
        seen.add(schedule_hash)
        found.append((schedule_hash, sch, space_index, 0))  # (no sample seed: a replay)
    return as_candidates(context, found)


def _provider(sch: Any, steps: Sequence[tuple[str, str, Any]]):
    """A decision provider replaying `steps`' decisions in order: a tile projected onto the
    new loop's extent, the others as they were (the postprocessors reject what does not fit)."""
    queue = iter(steps)

    def provide(inst: Any, inputs: Sequence[Any], attrs: Sequence[Any], decision: Any) -> Any:
        kind = inst.kind.name
        if kind not in SAMPLE_KINDS:
            return decision
        _, _, source_decision = next(queue)
        if kind == "SamplePerfectTile":
            extent = int(sch.get(inputs[0]).extent)
            return project_tile(extent, [int(f) for f in source_decision], int(attrs[1]))
        return source_decision

    return provide
