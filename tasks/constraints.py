"""Resource-constraint rules: drop candidates that cannot be good on a profile before they are
measured (GTA's rule-based pruning), as a MetaSchedule postprocessor.

A rule looks at a candidate's scheduled TIR and returns why it is hopeless, or None. Tuning
appends `constraint_postproc(profile)` to the target's postprocessors, so MetaSchedule's
evolutionary search discards a rejected candidate the way it discards an invalid one: it is
never built, run, or counted as a trial. Collection does not use the rules: the training data
keeps the whole design space, hopeless corners included, so models learn what they look like.

Rules only go in with evidence from measurements (bench/constraints.py re-derives the seed
dataset's candidates and reports, per profile, what a rule drops, the labels of what it drops,
and in how many tasks it would have dropped the best candidate). Today there is one:

- narrow vectors: a vectorized loop shorter than half the profile's float32 SIMD lanes leaves
  most of every vector instruction idle. Over the seed's 114 AVX2 tasks with >= 8 measured
  candidates it rejects 20% of them; their p90 label is 0.45 (all: 0.64 on the half inspected
  to pick the threshold), it never rejects a task's best (0 of 114) and only 2 tasks lose a
  candidate within 10% of their best (`bench/constraints.py`). On the grown seed (446 AVX2 tasks,
  2026-11-23) it rejects 18.9%, median label 0.244 against 0.291 for all, and 7 tasks lose their
  best: 5 keep >= 0.88 of it, the worst keep 0.73 (a 2.5 ms conv) and 0.58 (a 0.1 ms one). Still
  on there: a fifth of the search for a rare, mostly small loss. On SSE4.2 (4 lanes) it rejects
  nothing, and the data agrees: there, loops of 2-3 lanes are not worse than the rest.

Evidence is per ISA family: a rule validated on AVX2 data says nothing about AVX-512, where
vectors hold 16 float32 and the same threshold (8 lanes) dropped 9,458 candidates for 740
measured in one resnet18 retune (FACTS.md), each one paid for in search time. So a rule is on
by default only for the ISA families listed in its `VALIDATED_ON` (with the bench figures that
justify it); elsewhere it is off until bench/constraints.py has that family's data and says it
saves more than it costs. `REFUSED_ON` keeps the families where the data said no, with the
figures. `rules_for_target(..., only_validated=False)` gives every rule, for the bench to judge.

AVX-512 (the seed's Emerald Rapids shard: 54 tasks with >= 8 measured candidates, 1,728 of them):
the 8-lane threshold rejects 50% of candidates whose median label (0.279) is the median of all
(0.281), and 18 tasks lose their best (the best left is 0.57 of it in the worst). Narrow vectors
are not what makes an AVX-512 schedule slow. A 4-lane threshold would still lose the best in 4
tasks (23.7% rejected); 2 lanes rejects nothing. So the rule stays off there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterator

from core.hardware import HardwareProfile

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class Loop:
    kind: str  # serial | parallel | vectorized | unrolled | thread_binding
    extent: int | None  # None when not a constant


_KINDS = {0: "serial", 1: "parallel", 2: "vectorized", 3: "unrolled", 4: "thread_binding"}


def loops(func: Any) -> Iterator[Loop]:
    """Every loop of a scheduled PrimFunc (or of a statement), outermost first."""
    from tvm import s_tir, tirx

    stack = [func.body if isinstance(func, tirx.PrimFunc) else func]
    while stack:
        stmt = stack.pop()
        if stmt is None:
            continue
        if isinstance(stmt, tirx.For):
            extent = getattr(stmt.extent, "value", None)
            yield Loop(_KINDS.get(int(stmt.kind), str(stmt.kind)),
                       None if extent is None else int(extent))
            stack.append(stmt.body)
        elif isinstance(stmt, tirx.SeqStmt):
            stack.extend(reversed(list(stmt.seq)))
        elif isinstance(stmt, s_tir.SBlockRealize):
            stack.append(stmt.block)
        elif isinstance(stmt, s_tir.SBlock):
            stack.extend([stmt.body, stmt.init])
        else:  # LetStmt, IfThenElse, AttrStmt, Allocate...: follow whatever they nest
            stack.extend(getattr(stmt, name, None) for name in ("else_case", "then_case", "body"))


@dataclass(frozen=True)
class NarrowVectors:
    """Reject a vectorized loop with fewer than `min_lanes` iterations."""

    min_lanes: int

    def reject(self, func: Any) -> str | None:
        for loop in loops(func):
            if loop.kind == "vectorized" and loop.extent is not None \
                    and loop.extent < self.min_lanes:
                return (f"vectorized loop of {loop.extent} lanes (this profile's vectors hold "
                        f"{2 * self.min_lanes} float32)")
        return None


Rule = NarrowVectors  # the union of rule types, when there are more

# ISA families each rule was validated on by bench/constraints.py, with what it found there.
VALIDATED_ON: dict[type, dict[str, str]] = {
    NarrowVectors: {
        "avx2": "114 tasks, 20.2% rejected, 0 tasks lost their best (seed, 2026-11-21); "
                "446 tasks, 18.9% rejected at median label 0.244 (all: 0.291), 7 lost their best, "
                "5 of them keeping >= 0.88 of it (grown seed, 2026-11-23)",
        "sse42": "114 tasks, 0.0% rejected (seed, 2026-11-21)",
    },
}

# ISA families where bench/constraints.py's data said a rule costs more than it saves (off there).
REFUSED_ON: dict[type, dict[str, str]] = {
    NarrowVectors: {
        "avx512": "54 tasks, 50.1% rejected at median label 0.279 (all: 0.281), 18 tasks lost "
                  "their best (seed, cpu-emeraldrapids-avx512-1t, 2026-11-23)",
    },
}


def isa_family(target_kind: str, features: dict[str, float]) -> str:
    """The ISA family whose data validates rules: avx512, avx2, avx, sse42, neon, or the target
    kind for non-CPU targets."""
    if target_kind != "llvm":
        return target_kind
    for flag, family in (("has_avx512f", "avx512"), ("has_avx2", "avx2"), ("has_avx", "avx"),
                         ("has_sse42", "sse42"), ("has_neon", "neon")):
        if features.get(flag):
            return family
    return "generic"


def rules_for(profile: HardwareProfile) -> list[Rule]:
    """The rules that apply to `profile` (validated on its ISA family)."""
    return rules_for_target(profile.target_kind, profile.features)


def rules_for_target(target_kind: str, features: dict[str, float],
                     only_validated: bool = True) -> list[Rule]:
    """The rules for a target kind and hardware features (a stored `hardware` row's, too);
    with `only_validated`, only those validated on this ISA family."""
    if target_kind != "llvm":
        return []  # GPU limits (threads, shared memory) are MetaSchedule's VerifyGPUCode's job
    lanes = int(features.get("vector_unit_bytes") or 0) // FLOAT32_BYTES
    rules = [NarrowVectors(lanes // 2)] if lanes >= 4 else []
    if only_validated:
        family = isa_family(target_kind, features)
        rules = [r for r in rules if family in VALIDATED_ON.get(type(r), {})]
    return rules


def first_rejection(rules: list[Rule], func: Any) -> str | None:
    for rule in rules:
        reason = rule.reject(func)
        if reason:
            return reason
    return None


def constraint_postproc(rules: list[Rule], on_reject: Callable[[str], None] | None = None) -> Any:
    """A MetaSchedule postprocessor that fails (drops) every candidate a rule rejects."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.postproc import PyPostproc

    @derived_object
    class ResourceConstraints(PyPostproc):
        def _initialize_with_tune_context(self, context) -> None:
            pass

        def apply(self, sch) -> bool:
            reason = first_rejection(rules, sch.mod["main"])
            if reason and on_reject is not None:
                on_reject(reason)
            return reason is None

        def clone(self):
            return constraint_postproc(rules, on_reject)

    return ResourceConstraints()
