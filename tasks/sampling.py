"""Sample distinct candidate schedules of one task from MetaSchedule's design space.

As TenSet did: take the task's design spaces (post-order-apply of the target's default
schedule rules), replay one with every sampling decision drawn afresh, run the postprocessors
(a candidate they reject is invalid and never measured), and keep programs whose structural
hash is new. Attempt i uses schedule seed f(seed, i), so the same seed gives the same list and
asking for more candidates extends it (a re-run re-derives exactly what it sampled before).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from core.tvm_env import load_tvm, trace_json

FEATURE_EXTRACTOR = "per_store_feature_v1"  # MetaSchedule PerStoreFeature, 164-d, no workload
FEATURE_DIM = 164
_MAX_SEED = 2**31 - 1  # tvm.s_tir.Schedule seeds must lie in [1, 2^31 - 1]
_GIVE_UP_AFTER = 64  # consecutive attempts with nothing new: the space is exhausted
# On sm_80 and later MetaSchedule spans a float16 matmul's or convolution's space with its
# cuda-tensorcore rules, whose tiling tensorizes every eligible block with wmma: no sample of
# such a task runs on the SIMT cores. The plain "cuda" rule set spans the SIMT space of the
# same task, so the two can be measured side by side (`collect --simt`).
SIMT_RULES = "cuda"
# ...whose postprocessors reject most samples of a float16 convolution: 333 of 341 and 357 of
# 365 attempts to find 8 on two convolutions of tests/tasks/test_graphs.py's network (~10 ms
# each), so 64 invalid in a row is no sign that the space is exhausted there.
SIMT_GIVE_UP_AFTER = 1024


def uses_tensor_cores(trace_json: str) -> bool:
    """Whether a CUDA candidate's trace tensorizes with tensor-core (wmma) intrinsics."""
    return "wmma" in trace_json


@dataclass(frozen=True)
class Candidate:
    schedule_hash: str  # structural hash of the scheduled module (the dedup key)
    trace_json: str  # the full trace with decisions and postprocessors, as MetaSchedule writes it
    design_space: int
    sample_seed: int
    features: np.ndarray = field(repr=False)  # (n_stores, FEATURE_DIM) float32


def attempt_seed(seed: int, attempt: int) -> int:
    return 1 + (seed * 1_000_003 + attempt * 7919) % (_MAX_SEED - 1)


def sample_candidates(mod_json: str, target: dict, count: int, seed: int,
                      known_hashes: Iterable[str] = (),
                      give_up_after: int = _GIVE_UP_AFTER,
                      rules: str | None = None) -> tuple[list[Candidate], int]:
    """Up to `count` new distinct valid candidates; returns them and the invalid-sample count.

    `known_hashes` are schedule hashes already stored: they count towards `count` (so a re-run
    that finds them stored samples nothing new) but are not returned again. Sampling stops
    after `give_up_after` consecutive attempts that are invalid or repeat a hash this call
    already derived. `rules`: a MetaSchedule rule set to span the space with instead of the
    target's own (SIMT_RULES: a tensor-core GPU's space without its tensor cores).
    """

    context, spaces, fresh = design_spaces(mod_json, target, attempt_seed(seed, 0),
                                           rules)  # loads TVM
    from tvm.s_tir.meta_schedule.utils import shash2hex

    postprocs = context.space_generator.postprocs
    stored = set(known_hashes)
    derived: set[str] = set()  # hashes this call produced, stored ones included
    found: list[tuple[str, Any, int, int]] = []
    invalid = since_new = attempt = 0
    while len(stored | derived) < count and since_new < give_up_after:
        attempt += 1
        since_new += 1
        space_index = attempt % len(spaces)
        sch_seed = attempt_seed(seed, attempt)
        sch = fresh.copy()
        sch.seed(sch_seed)
        # A decision provider returning None makes every Sample* instruction draw anew.
        if not apply_space(spaces[space_index], sch, postprocs, lambda *_: None):
            invalid += 1
            continue
        schedule_hash = shash2hex(sch.mod)
        if schedule_hash in derived:
            continue
        # Re-deriving a stored candidate is progress along the seeded list, not a sign that
        # the space is exhausted: counting it as "nothing new" stopped every extension of a
        # task that already had `give_up_after` candidates.
        derived.add(schedule_hash)
        since_new = 0
        if schedule_hash not in stored:
            found.append((schedule_hash, sch, space_index, sch_seed))

    return as_candidates(context, found), invalid


SampleRequest = tuple[str, dict, int, int]  # (task module JSON, target, count, seed)


def sample_tasks(requests: Sequence[SampleRequest], threads: int,
                 should_stop: Callable[[], bool] = lambda: False
                 ) -> list[tuple[list[Candidate], int] | None]:
    """sample_candidates for each request, `threads` tasks at a time; None where `should_stop`
    said so before that task began (a deadline, an interrupt). Each task draws from its own
    context and seeded schedules, so the candidates are the ones a call per task gives, in any
    order. Threads, not processes: TVM's FFI calls (replay, postprocessors, lowering for the
    features) release the GIL, and a process would pay TVM's import and the task's design
    space again."""

    def one(request: SampleRequest) -> tuple[list[Candidate], int] | None:
        return None if should_stop() else sample_candidates(*request)

    if threads <= 1:
        return [one(r) for r in requests]
    if requests:  # the target's tensor intrinsics imported once, before any thread needs them
        load_tvm(requests[0][1])
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="sample") as pool:
        return list(pool.map(one, requests))


def as_candidates(context: Any, found: Sequence[tuple[str, Any, int, int]]) -> list[Candidate]:
    """Candidates of scheduled modules, (schedule hash, schedule, design space index, sample
    seed) each, with their features extracted in one batch."""
    if not found:
        return []
    features = per_store_features(context, [sch for _, sch, _, _ in found])
    return [Candidate(schedule_hash=h, trace_json=trace_json(sch.trace),
                      design_space=space_index, sample_seed=sch_seed, features=feats)
            for (h, sch, space_index, sch_seed), feats in zip(found, features)]


class NoDesignSpace(RuntimeError):
    """TVM failed to generate a task's design space under a rule set. Seen on TVM 0.27: the
    H200's float16 EfficientNet squeeze-excite convolutions (1x1 spatial) fail in the CUDA
    tensor-core rules with "Back optional access"; the plain `cuda` rules sample them. A
    RuntimeError, as TVM's own was: a search's warm start or fill survives it as before
    (tasks.tuning.log.survive_search_errors)."""


def design_spaces(mod_json: str, target: dict, rand_state: int,
                  rules: str | None = None) -> tuple[Any, list[Any], Any]:
    """A task's TuneContext (its postprocessors: `context.space_generator.postprocs`), its
    design spaces as traces without postprocessors, and a fresh schedule of its module to copy
    per attempt: copying one and seeding it gives the same draws as constructing a schedule
    with that seed, 13x faster (0.12 vs 1.6 ms: 10% of sampling, docs/tuning-results.md).
    `rules`: a MetaSchedule rule set name (schedule rules, postprocessors and mutators) in
    place of the one the target implies."""
    tvm = load_tvm(target)
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    mod = tvm.ir.load_json(mod_json)
    generator = "post-order-apply" if rules is None else \
        ms.space_generator.PostOrderApply(sch_rules=rules, postprocs=rules, mutator_probs=rules)
    context = ms.TuneContext(mod, target=Target(target), space_generator=generator,
                             task_name="sample", rand_state=rand_state, num_threads=1)
    try:
        generated = context.generate_design_space()
    except RuntimeError as exc:  # e.g. tensor-core tiling of a float16 SE convolution on CUDA
        raise NoDesignSpace(f"MetaSchedule could not build this task's design space ("
                            f"{str(exc).strip().splitlines()[-1][:160]})") from None
    spaces = [s.trace.simplified(remove_postproc=True) for s in generated]
    return context, spaces, s_tir.Schedule(mod)


def apply_space(space: Any, sch: Any, postprocs: Sequence[Any],
                decision_provider: Callable[..., Any]) -> bool:
    """Replay a design space's trace on `sch` with `decision_provider`'s decisions, then the
    postprocessors; False where TVM or a postprocessor rejects the result."""
    try:
        space.apply_to_schedule(sch, remove_postproc=True, decision_provider=decision_provider)
        # marked as MetaSchedule marks it: a search replaying this trace (a warm start, a
        # database it resumes from) strips the postprocessors before applying its own;
        # unmarked, they ran twice ("old_outputs.size() == new_outputs.size()")
        sch.enter_postproc()
        return all(p.apply(sch) for p in postprocs)
    except Exception:  # noqa: BLE001 - TVM raises TVMError subclasses for invalid samples
        return False


def per_store_features(context: Any, schedules: Sequence[Any]) -> list[np.ndarray]:
    """Each scheduled module's PerStoreFeature rows, (n_stores, FEATURE_DIM) float32."""
    from tvm.s_tir import meta_schedule as ms

    features = ms.feature_extractor.PerStoreFeature(extract_workload=False).extract_from(
        context, [ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"]))
                  for sch in schedules])
    return [f.numpy().astype(np.float32) for f in features]


def apply_trace(mod_json: str, trace_json: str, target_kind: str = "llvm"):
    """Rebuild a candidate's scheduled module from its task module and trace JSON."""
    tvm = load_tvm(target_kind)
    return scheduled_module(tvm.ir.load_json(mod_json), trace_json)


def scheduled_module(mod: Any, trace_json: str):
    """`mod` (a task's loaded module) scheduled by a candidate's trace JSON (TVM loaded)."""
    import json

    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace_json), sch)
    return sch.mod
