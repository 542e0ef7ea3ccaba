"""Instant tuning: a whole network in minutes, with a pre-trained model and no search.

Per task: sample many candidates from MetaSchedule's design space (tasks.sampling), rank them
with the learned model (the same per-store features it was trained on), measure only the top
few, and keep the fastest in a MetaSchedule JSON database; then compile the network with it
and time it end to end, as a full retune does. Every task gets a measured, model-chosen
schedule, the small ones included, so no function of the build keeps an unscheduled default.

Given a trial budget beyond that first pass, a second pass spends the rest where the time
is: each task's share of the estimated network latency (its best measured time x its
occurrences) sets how many more of its ranked candidates are measured, drawn from a fresh
sample beside the first one's unmeasured remainder, heaviest task first (so a deadline cuts
the tasks that matter least). On resnet18 four 3x3 convolutions carry ~3/4 of the time, and a
flat top-k gave them a third of the measurements.

It spends its time measuring what the model believes in, and none on evolution: the model's
ranking is the whole search. That is what a pre-trained model is for on a machine seen for the
first time, and the baseline the full search must beat. (tasks.model_evolution can breed the
best samples by the model alone first: better picks, but not worth their time on the VM
measured, so off by default.)
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from core.hardware import HardwareProfile
from storage.ms_database import MS_FAILED_RUN_SECS
from tasks.asm_rerank import AsmReranker, Rerank
from tasks.budget_shares import allocate_by_share
from tasks.model_evolution import PARENTS, Scored, evolve
from tasks.schedule_transfer import SourceSchedule, transfer_candidates

FIRST_PASS_TOP = 8  # measured per task in the first pass when the budget allows more
# A search that stopped early (deadline, search error) left tasks with no valid measurement:
# each gets the model's top picks of FILL_SAMPLES ranked (few, so it takes seconds a task),
# measured FILL_PICKS at a time until one runs (a failure is common on blocked layouts).
FILL_SAMPLES = 64
FILL_PICKS = 2
FILL_ROUNDS = 2
# Candidates made from the library's schedules of similar tasks, ranked beside the sampled
# ones on a task's first ranking (a replay takes ~10 ms, about as long as a sample).
TRANSFERRED = 32


@dataclass
class _TaskState:
    """One task between the passes: what was ranked and not measured, and its best time."""
    context: int  # the TuningLog context its measurements go to
    task: Any  # the extracted task: task_name, weight, dispatched[0] (its module)
    mod_json: str  # its module as JSON, what sampling and the measurer take
    flops: float
    remainder: list[Any] = field(default_factory=list)  # ranked, not measured, best first
    sampled: set[str] = field(default_factory=set)  # schedule hashes drawn so far
    best_s: float | None = None  # fastest measured mean run time
    space_exhausted: bool = False  # sampling found fewer distinct candidates than it asked
    reranked: bool = False  # its rankings' top is re-ordered by the code (tasks.asm_rerank)


def _commit(database: Any, task_mod: Any, target: Any, results: list[tuple[str, Any]]) -> None:
    """A task's measured candidates, (trace JSON, MeasureResult), as MetaSchedule tuning
    records (a failed one with run_secs 1e10, as MetaSchedule writes them)."""
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    workload = database.commit_workload(task_mod)
    args_info = ms.arg_info.ArgInfo.from_prim_func(task_mod["main"])
    for trace_json, result in results:
        sch = s_tir.Schedule(task_mod)
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace_json), sch)
        run_secs = ([MS_FAILED_RUN_SECS] if result.error_kind
                    else [float(s) for s in result.run_secs])
        database.commit_tuning_record(ms.database.TuningRecord(
            sch.trace, workload, run_secs=run_secs, target=target, args_info=args_info))


def instant_tune(extracted: list[Any], chosen: list[int], flops: list[float],
                 profile: HardwareProfile, database: Any, model_path: str, log: Any,
                 measurer: Any, samples: int | Sequence[int], measure_top: int, seed: int,
                 report: Callable[[str], None] = print,
                 context_of: list[int] | None = None, budget: int | None = None,
                 library: Sequence[SourceSchedule] = (), evolve_generations: int = 0,
                 threads: int = 1, fresh_second: bool = True,
                 rerank: Rerank | None = None) -> dict[str, Any] | None:
    """Tune the `chosen` tasks of `extracted` (`flops` each) instantly into `database`; `log`
    (a TuningLog) gets every measured batch, as the search's callback would feed it, under
    the context `context_of[i]` of the i-th chosen task (default: i; a search that follows
    may give a task several contexts). `samples`: candidates each task ranks, one number for
    all or one per chosen task (tasks.budget_shares.samples_by_importance). With a `budget`
    of trials beyond the first pass's `measure_top` per task, the second pass spends the
    rest by latency share (ranking their mean of fresh samples a task). A `library` of other
    tasks' measured schedules (tasks.schedule_transfer) adds up to TRANSFERRED candidates made
    from them to each task's first ranking, beside the sampled ones.
    `evolve_generations` > 0: each task's first ranking also holds the children of its best
    samples bred that many generations by the model alone (tasks.model_evolution).
    `threads` > 1: every task's first sample is drawn up front, that many tasks at a time
    (tasks.sampling.sample_tasks), before anything is measured, so no sampling runs beside a
    timing; the candidates are the same.
    `rerank` (x86 CPUs): the top of each ranking of the tasks it names (by FLOPs share) is
    built and re-ordered by an asm model before the top is measured (tasks.asm_rerank);
    returns what that cost (AsmReranker.summary; None without it)."""
    reranker = AsmReranker(rerank, profile, measurer) if rerank else None
    tvm, tuner = _tuner(profile, database, model_path, log, measurer, report)
    tuner.library = library
    tuner.evolve_generations = evolve_generations
    tuner.reranker = reranker
    pending = [_TaskState(i if context_of is None else context_of[i], extracted[index],
                          tvm.ir.save_json(extracted[index].dispatched[0]), flops[i])
               for i, index in enumerate(chosen)]
    if rerank:
        for i in _heaviest(pending, rerank.flops_share):
            pending[i].reranked = True
    wanted_of = [samples if isinstance(samples, int) else samples[i] for i in range(len(chosen))]
    drawn = _draw_up_front(profile, pending, wanted_of, seed, threads, log, report)
    states = []
    for state, wanted, first_sample in zip(pending, wanted_of, drawn):
        if log.should_stop():
            break
        task = state.task
        started = time.monotonic()
        ranked = tuner.rank(state, wanted, seed, drawn=first_sample)
        if not ranked:
            report(f"{task.task_name}: no valid candidate in its design space; left untuned")
            continue
        state.space_exhausted = len(ranked) - _transferred(ranked) - _evolved(ranked) < wanted
        built_s = reranker.build_s if reranker else 0.0
        ranked = tuner.rerank(state, ranked)
        measured = tuner.measure(state, ranked[:measure_top])
        state.remainder = ranked[measure_top:]
        states.append(state)
        lent = (f" ({_transferred(ranked)} transferred, {_transferred(ranked[:measure_top])} "
                "of them measured)" if library else "")
        if evolve_generations:
            lent += (f" ({_evolved(ranked)} bred by the model, {_evolved(ranked[:measure_top])} "
                     "of them measured)")
        if reranker and state.reranked and len(ranked) > 1:
            top = min(reranker.settings.pool, len(ranked))
            lent += (f", re-ordered its top {top} by their code "
                     f"({reranker.build_s - built_s:.1f} s of builds)")
        report(f"{task.task_name}: ranked {len(ranked)} candidates{lent}, measured the top "
               f"{measured} in {time.monotonic() - started:.1f} s")
    extra = (budget or 0) - log.trials
    if extra > 0 and not log.should_stop():
        _second_pass(tuner, states, extra, samples if isinstance(samples, int) else
                     round(sum(samples) / len(samples)), seed, fresh=fresh_second)
    if reranker is None:
        return None
    report(f"re-ranking by the code: {reranker.built} candidates built in "
           f"{reranker.build_s:.0f} s ({reranker.failed} failed to build)")
    return reranker.summary()


def _heaviest(states: list[_TaskState], share: float) -> list[int]:
    """Positions of the tasks carrying `share` of the states' FLOPs x occurrences."""
    from tasks.tuning.selection import TaskShare, select_tasks  # (the package imports this)

    return select_tasks([TaskShare(str(s.task.task_name), s.flops, int(s.task.weight))
                         for s in states], share)


def _draw_up_front(profile: HardwareProfile, states: list[_TaskState], wanted: list[int],
                   seed: int, threads: int, log: Any, report: Callable[[str], None]
                   ) -> list[tuple[list[Any], int] | None]:
    """Each task's first sample, drawn `threads` tasks at a time (None each where threads is 1:
    the task samples when its turn comes, as it always did)."""
    if threads <= 1:
        return [None] * len(states)
    import threading

    from tasks.sampling import sample_tasks

    lock = threading.Lock()  # should_stop notes (and reports) a passed deadline once

    def stop() -> bool:
        with lock:
            return log.should_stop()

    started = time.monotonic()
    drawn = sample_tasks([(s.mod_json, profile.target, n, seed) for s, n in zip(states, wanted)],
                         threads, stop)
    report(f"sampled {sum(d is not None for d in drawn)} tasks' candidates on {threads} "
           f"threads in {time.monotonic() - started:.1f} s")
    return drawn


def fill_unmeasured(extracted: list[Any], chosen: list[int], flops: list[float],
                    profile: HardwareProfile, database: Any, model_path: str | None, log: Any,
                    measurer: Any, seed: int, report: Callable[[str], None] = print) -> list[str]:
    """Give every chosen task that the search left with no valid measurement a measured
    schedule: the model's top FILL_PICKS of FILL_SAMPLES sampled candidates (`model_path`
    None, as for MetaSchedule's XGB, which knows nothing before measuring: the first
    sampled), then the next picks if all of those failed, FILL_ROUNDS times at most. Without
    it such a task keeps TVM's default schedule: one 3x3 convolution left so made a tuned
    resnet18 3.3x slower (255.5 ms, docs/tuning-results.md). Runs after a deadline, on
    purpose past it (seconds a task); an interrupt (Ctrl-C, SIGTERM) ends it after the task
    in flight. Returns the names of the tasks it measured a valid schedule for."""
    missing = log.unmeasured_tasks()
    if not missing:
        return []
    names = ", ".join(log.task_names[i] for i in missing)
    if log.stop_reason == "interrupt":  # promptly, as asked: they keep their defaults
        report(f"interrupted: {len(missing)} tasks with no valid measurement keep their "
               f"default schedules ({names})")
        return []
    how = (f"the model's top picks of {FILL_SAMPLES} sampled" if model_path
           else f"the first of {FILL_SAMPLES} sampled")
    report(f"{len(missing)} of {len(chosen)} tasks have no valid measurement ({names}): "
           f"measuring {how} candidates for each before compiling")
    tvm, tuner = _tuner(profile, database, model_path, log, measurer, report)
    filled = []
    for i in missing:
        if log.stop_reason == "interrupt":
            report("interrupted: the remaining tasks keep their default schedules")
            break
        task = extracted[chosen[i]]
        state = _TaskState(log.context_task.index(i), task,
                           tvm.ir.save_json(task.dispatched[0]), flops[i])
        ranked = tuner.rank(state, FILL_SAMPLES, seed)
        for start in range(0, FILL_PICKS * FILL_ROUNDS, FILL_PICKS):
            if state.best_s is not None or start >= len(ranked):
                break
            tuner.measure(state, ranked[start:start + FILL_PICKS])
        if state.best_s is None:
            report(f"{task.task_name}: no valid schedule among {len(ranked)} sampled; it "
                   "keeps its default")
        else:
            filled.append(str(task.task_name))
    return filled


def _tuner(profile: HardwareProfile, database: Any, model_path: str | None, log: Any,
           measurer: Any, report: Callable[[str], None]) -> tuple[Any, _Tuner]:
    from core.tvm_env import load_tvm
    from models.registry import load_model

    tvm = load_tvm(profile.target)
    model = load_model(model_path) if model_path else None
    return tvm, _Tuner(tvm, profile, database, model, log, measurer, report)


def _second_pass(tuner: _Tuner, states: list[_TaskState], extra: int, samples: int, seed: int,
                 batch_size: int = FIRST_PASS_TOP, fresh: bool = True) -> None:
    """Measure `extra` more candidates, spread by each task's share of the estimated latency
    (best measured time x occurrences); with `fresh`, a task whose design space was not
    exhausted draws a fresh sample of `samples`, ranked beside its first pass's unmeasured
    remainder (without: the remainder alone, no sampling time). They are
    measured in batches of `batch_size`, so a deadline or a signal ends the pass within one
    (a heavy task's share, whole, took up to 50 s on resnet18)."""
    timed = [s for s in states if s.best_s is not None]
    latency = [s.best_s * float(s.task.weight) for s in timed]
    caps = [len(s.remainder) if s.space_exhausted or not fresh else len(s.remainder) + samples
            for s in timed]
    counts = allocate_by_share(latency, extra, caps)
    total = sum(latency) or 1.0
    plan = sorted(((n, s, t) for n, s, t in zip(counts, timed, latency) if n > 0),
                  key=lambda p: -p[2])
    tuner.report(f"second pass: {sum(counts)} more measurements by share of the estimated "
                 f"latency ({total * 1e3:.1f} ms): " + ", ".join(
                     f"{s.task.task_name} {n} ({t / total:.0%})"
                     for n, s, t in plan))
    for count, state, _ in plan:
        if tuner.log.should_stop():
            return
        started, before = time.monotonic(), state.best_s
        pool = state.remainder
        if fresh and not state.space_exhausted:
            # another draw (seed + 1) beside the first pass's, ranked together
            pool = pool + tuner.rank(state, samples, seed + 1)
            pool.sort(key=lambda c: -c.score)
            pool = tuner.rerank(state, pool)  # the new top's code (a pick built before: kept)
        measured, count = 0, min(count, len(pool))  # a second draw may come up short
        while measured < count and not tuner.log.should_stop():  # a deadline, within a batch
            batch = pool[measured:min(count, measured + batch_size)]
            measured += tuner.measure(state, batch)
        state.remainder = pool[measured:]
        tuner.report(f"{state.task.task_name}: measured {measured} more of {len(pool)} ranked in "
                     f"{time.monotonic() - started:.1f} s; best {before * 1e3:.3f} -> "
                     f"{state.best_s * 1e3:.3f} ms")


@dataclass
class _Ranked:
    candidate: Any
    score: float
    transferred: bool = False  # made from another task's schedule (tasks.schedule_transfer)
    evolved: bool = False  # bred from the task's samples by the model (tasks.model_evolution)


def score_candidates(model: Any, hardware_name: str, hardware_vector: np.ndarray,
                     candidates: Sequence[Any]) -> np.ndarray:
    """`model`'s scores of sampled candidates (tasks.sampling.Candidate; higher: faster) on
    the hardware named so, with its feature vector."""
    from models.dataset import dataset_from_features

    return model.predict(dataset_from_features(
        [c.features for c in candidates], hardware_name, hardware_vector,
        traces=[c.trace_json for c in candidates]))


def _transferred(ranked: Sequence[_Ranked]) -> int:
    return sum(r.transferred for r in ranked)


def _evolved(ranked: Sequence[_Ranked]) -> int:
    return sum(r.evolved for r in ranked)


class _Tuner:
    """Ranks (with `model`; None keeps the sampling order) and measures one task's
    candidates, and records them (database and log)."""

    def __init__(self, tvm: Any, profile: HardwareProfile, database: Any, model: Any, log: Any,
                 measurer: Any, report: Callable[[str], None]) -> None:
        self.tvm, self.profile, self.database, self.model = tvm, profile, database, model
        self.log, self.measurer, self.report = log, measurer, report
        self.hardware = np.array(profile.feature_vector(), np.float32)
        self.next_id = 0  # unique per run: a worker loads each artifact path once (dlopen)
        self.library: Sequence[SourceSchedule] = ()  # other tasks' schedules to transfer
        self.evolve_generations = 0  # model-only evolution on a task's first ranking
        self.reranker: AsmReranker | None = None  # re-orders a ranking's top by its code

    def rank(self, state: _TaskState, samples: int, seed: int,
             drawn: tuple[list[Any], int] | None = None) -> list[_Ranked]:
        """`samples` new distinct candidates of the task (none drawn before), and on its first
        ranking up to TRANSFERRED made from the library and, with `evolve_generations`, the
        children the model bred from the best of them, best first. `drawn`: the first
        ranking's sample, drawn already (what sample_candidates gives for `samples`, `seed`)."""
        from tasks.sampling import sample_candidates

        known = state.sampled
        first = not known  # the task's first ranking: the only one that transfers and breeds
        candidates, _ = drawn if drawn is not None and first else sample_candidates(
            state.mod_json, self.profile.target, len(known) + samples, seed, known_hashes=known)
        sampled = len(candidates)
        if self.library and first and self.model is not None:
            candidates += transfer_candidates(
                state.mod_json, self.profile.target, self.library, state.flops, TRANSFERRED,
                known_hashes=known | {c.schedule_hash for c in candidates})
        state.sampled = known | {c.schedule_hash for c in candidates}
        if not candidates:
            return []
        if self.model is None:  # no model: the sampling order, a random one
            return [_Ranked(c, 0.0) for c in candidates]
        scores = self.score(candidates)
        ranked = [_Ranked(candidates[i], float(scores[i]), transferred=i >= sampled)
                  for i in np.argsort(-scores, kind="stable")]
        if self.evolve_generations and first:
            children = evolve(state.mod_json, self.profile.target,
                              [Scored(r.candidate, r.score) for r in ranked[:PARENTS]],
                              self.score, seed, generations=self.evolve_generations,
                              known_hashes=state.sampled)
            state.sampled = state.sampled | {c.candidate.schedule_hash for c in children}
            ranked = sorted(ranked + [_Ranked(c.candidate, c.score, evolved=True)
                                      for c in children], key=lambda r: -r.score)
        return ranked

    def rerank(self, state: _TaskState, ranked: list[_Ranked]) -> list[_Ranked]:
        """`ranked` with its top re-ordered by the reranker's asm model (as it was: none)."""
        if self.reranker is None or not state.reranked or len(ranked) < 2:
            return ranked
        from tvm.s_tir.meta_schedule.utils import shash2hex

        order = self.reranker.order(state.mod_json, shash2hex(state.task.dispatched[0]),
                                    state.flops, [r.candidate for r in ranked])
        return [ranked[i] for i in order]

    def score(self, candidates: Sequence[Any]) -> np.ndarray:
        return score_candidates(self.model, self.profile.name, self.hardware, candidates)

    def measure(self, state: _TaskState, picks: list[_Ranked]) -> int:
        """Build and run `picks`; commit them to the database and the log."""
        from tvm.s_tir.meta_schedule.utils import shash2hex

        from tasks.measure import MeasureJob

        task_mod = state.task.dispatched[0]
        workload = shash2hex(task_mod)
        measuring = time.monotonic()
        results = self.measurer.measure([
            MeasureJob(self.next_id + i, workload, state.mod_json, p.candidate.trace_json,
                       state.flops) for i, p in enumerate(picks)])
        self.log.add_measure_time(time.monotonic() - measuring)
        self.next_id += len(picks)
        _commit(self.database, task_mod, self.profile.tvm_target(),
                [(p.candidate.trace_json, r) for p, r in zip(picks, results)])
        self.log.add(state.context, [None if r.error_kind else list(r.run_secs)
                                     for r in results])
        times = [float(np.mean(r.run_secs)) for r in results if not r.error_kind]
        if times:
            state.best_s = min(times + ([state.best_s] if state.best_s is not None else []))
        failed = [r.error_kind for r in results if r.error_kind]
        if failed:
            self.report(f"{state.task.task_name}: {len(failed)} of {len(picks)} failed "
                        f"({', '.join(sorted(set(failed)))})")
        return len(picks)


def measure_top_for(trials: int, tasks: int) -> int:
    """Candidates measured per task in the first pass: the trial budget spread over the
    tasks, at least 2 and at most FIRST_PASS_TOP (the rest goes to the second pass)."""
    return max(2, min(FIRST_PASS_TOP, trials // max(tasks, 1)))
