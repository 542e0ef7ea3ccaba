"""Tune a network with MetaSchedule, driven by a cost model, and measure what it gained.

One `tune_network` call: import the network into Relax, extract MetaSchedule's tuning tasks,
keep the tasks that carry `flops_share` of the network's FLOPs (x occurrences), tune them with
`ms.tune_tasks` under a trial budget (and optionally a wall-clock budget), then compile the
network with the tuning database and time it end to end, untuned and tuned, on the profile's
threads. Builds and runs go through tenforge's long-lived workers (tasks.ms_backend).

The tuning curve is recorded after every measured batch: trials so far, wall time, and the
estimated network latency = sum over tuned tasks of occurrences x best latency so far (what
MetaSchedule's task scheduler optimizes). The end-to-end latency is measured once, at the end:
it also contains the untuned tasks, the Relax VM's overhead and memory traffic between
functions, so it is larger than the estimate; the result reports both.

Schedulers (tasks.schedulers): "gradient" and "round-robin" are MetaSchedule's, ported so they
can stop at any batch; "gain" and "dual" are tenforge's; "instant" does no search
(tasks.instant). A deadline, SIGTERM or Ctrl-C ends the search after the batch in flight, and
the run still compiles and times what it found. Cost models: "xgb" (MetaSchedule's XGBModel,
from scratch) or the path of a saved tenforge model (models.ms_adapter).
"""

from __future__ import annotations

import math
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Sequence, get_args

import numpy as np

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.progress import bar
from tasks.constraints import constraint_postproc, rules_for
from tasks.schedulers import create_scheduler

Scheduler = Literal["gradient", "round-robin", "gain", "dual", "instant"]
SCHEDULERS: tuple[str, ...] = get_args(Scheduler)
SEARCH_SCHEDULERS = tuple(s for s in SCHEDULERS if s != "instant")  # instant: no search


@dataclass(frozen=True)
class TaskShare:
    """One extracted task and what it weighs in the network."""

    name: str
    flops: float
    weight: int  # occurrences in the network

    @property
    def importance(self) -> float:
        return self.flops * self.weight


def select_tasks(tasks: Sequence[TaskShare], flops_share: float) -> list[int]:
    """Indices of the most important tasks (FLOPs x occurrences, descending) that together
    carry at least `flops_share` of the network's total; at least one task."""
    if not 0 < flops_share <= 1:
        raise TenforgeError(f"flops share must be in (0, 1], got {flops_share}")
    total = sum(t.importance for t in tasks)
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].importance)
    chosen: list[int] = []
    covered = 0.0
    for i in order:
        if chosen and (covered >= flops_share * total or tasks[i].importance <= 0):
            break
        chosen.append(i)
        covered += tasks[i].importance
    return sorted(chosen)


@dataclass
class CurvePoint:
    trials: int
    wall_s: float
    task: str
    task_best_s: float  # that task's best latency so far (inf: nothing valid yet)
    estimated_s: float | None  # sum of weight x best over tuned tasks (None until all have one)


@dataclass
class TuningLog:
    """What happened during tuning, filled by the measure callback.

    MetaSchedule tunes "contexts"; usually one per task, but the dual scheduler gives each of a
    task's design spaces its own context. `context_task` maps a context to its task (identity
    when omitted); a task's best is the best over its contexts."""

    task_names: list[str]
    task_weights: list[float]
    context_task: list[int] | None = None
    deadline: float | None = None  # time.monotonic() after which tuning stops
    budget: int | None = None  # the trial budget, for the progress bar
    report: Callable[[str], None] = print
    on_trials: Callable[[int], None] | None = None  # progress: trials measured so far
    started: float = field(default_factory=time.monotonic)
    trials: int = 0
    errors: int = 0
    rejected_by_rules: int = 0  # candidates dropped before measurement (tasks.constraints)
    best: list[float] = field(default_factory=list)
    context_best: list[float] = field(default_factory=list)
    trials_per_task: list[int] = field(default_factory=list)
    curve: list[CurvePoint] = field(default_factory=list)
    context_trials: list[int] = field(default_factory=list)
    stop_reason: str | None = None  # "deadline" or "interrupt" once the search must end

    def __post_init__(self) -> None:
        self.best = [math.inf] * len(self.task_names)
        self.trials_per_task = [0] * len(self.task_names)
        self.set_contexts(self.context_task or list(range(len(self.task_names))))

    def set_contexts(self, context_task: list[int]) -> None:
        """The contexts MetaSchedule will tune (context -> its task), with nothing measured."""
        self.context_task = context_task
        self.context_best = [math.inf] * len(context_task)
        self.context_trials = [0] * len(context_task)

    def context_weight(self, context: int) -> float:
        return self.task_weights[self.context_task[context]]

    def estimated(self) -> float | None:
        if any(math.isinf(b) for b in self.best):
            return None
        return float(sum(w * b for w, b in zip(self.task_weights, self.best)))

    def add(self, context_id: int, run_secs: list[list[float] | None]) -> None:
        task_id = self.context_task[context_id]
        for secs in run_secs:
            self.trials += 1
            self.context_trials[context_id] += 1
            self.trials_per_task[task_id] += 1
            if secs:
                latency = float(np.mean(secs))
                self.context_best[context_id] = min(self.context_best[context_id], latency)
                self.best[task_id] = min(self.best[task_id], latency)
            else:
                self.errors += 1
        wall = time.monotonic() - self.started
        estimate = self.estimated()
        self.curve.append(CurvePoint(self.trials, wall, self.task_names[task_id],
                                     self.best[task_id], estimate))
        if self.on_trials is not None:
            self.on_trials(self.trials)
        shown = f"{estimate * 1e3:.3f} ms" if estimate is not None else "pending"
        progress = f"{bar(self.trials, self.budget)} " if self.budget else ""
        self.report(f"{progress}tuned {self.trials} trials in {wall:.0f} s "
                    f"({60 * self.trials / max(wall, 1e-9):.1f}/min, {self.errors} errors, "
                    f"{self.rejected_by_rules} dropped by rules); "
                    f"estimated network latency {shown}")

    def note_rejection(self, reason: str) -> None:
        self.rejected_by_rules += 1

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def should_stop(self) -> bool:
        """Must the search end now? (the schedulers ask before every batch)"""
        if self.stop_reason is None and self.past_deadline():
            self.stop_reason = "deadline"
            self.report("wall-clock budget spent: stopping after the batch in flight")
        return self.stop_reason is not None

    def interrupt(self, what: str) -> None:
        """A signal asked to stop: end after the batch in flight, keep what was measured."""
        self.stop_reason = "interrupt"
        self.report(f"{what}: stopping after the batch in flight; what was measured is kept "
                    "(send it again to abort)")

    def final_reason(self) -> str:
        """Why the search ended, as tuning_runs.stop_reason records it."""
        if self.stop_reason:
            return self.stop_reason
        return "trials" if self.budget is not None and self.trials >= self.budget \
            else "exhausted"


def _recorder(log: TuningLog) -> Any:
    """A MetaSchedule measure callback that feeds `log` (the schedulers in tasks.schedulers
    enforce its deadline: terminating tasks from here crashed MetaSchedule's own)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.measure_callback import PyMeasureCallback

    @derived_object
    class Recorder(PyMeasureCallback):
        def apply(self, task_scheduler, task_id, measure_candidates, builder_results,
                  runner_results) -> None:
            log.add(task_id, [[float(s) for s in r.run_secs]
                              if r.run_secs is not None and r.error_msg is None else None
                              for r in runner_results])

    return Recorder()


@contextmanager
def stop_on_signals(log: TuningLog) -> Iterator[None]:
    """While tuning: the first SIGTERM or Ctrl-C ends the search after the batch in flight (the
    run then compiles and records what it found); a second one aborts. Only the main thread
    can take signals: elsewhere (a flow run in a worker thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        if log.stop_reason == "interrupt":
            raise KeyboardInterrupt
        log.interrupt(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def tune_contexts(extracted: list[Any], profile: HardwareProfile, work_dir: Path,
                  population: int, seed: int, rules: list[Any], per_design_space: bool,
                  on_reject: Callable[[str], None]) -> tuple[list[Any], list[int]]:
    """MetaSchedule tune contexts for `extracted` tasks, and the task of each context.

    The target's default schedule rules, mutators and postprocessors, plus the resource-
    constraint rules as a last postprocessor. With `per_design_space`, a task whose rules give
    several design spaces (e.g. a conv tiled with and without a write cache) becomes one
    context per space, so a scheduler can give each space its own share of the budget: in the
    seed dataset the best candidate of a 3-space task lies in space 0, 1, 2 for 46, 74, 100 of
    220 tasks, so no space can be skipped, yet evolution over all of them at once tends to
    follow whichever looks best early."""
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.logging import get_loggers_from_work_dir
    from tvm.s_tir.meta_schedule.utils import fork_seed

    kind = "cuda" if profile.target_kind == "cuda" else "llvm"
    postprocs = [*ms.postproc.Postproc.create(kind)]
    if rules:
        postprocs.append(constraint_postproc(rules, on_reject))

    def strategy() -> Any:
        return ms.search_strategy.EvolutionarySearch(
            population_size=population, init_min_unmeasured=min(50, population))

    contexts: list[Any] = []
    context_task: list[int] = []
    loggers = get_loggers_from_work_dir(str(work_dir), [t.task_name for t in extracted])
    for task_id, (task, logger, rand_state) in enumerate(
            zip(extracted, loggers, fork_seed(seed, n=len(extracted)))):
        context = ms.TuneContext(
            mod=task.dispatched[0], target=task.target,
            space_generator=ms.space_generator.PostOrderApply(postprocs=postprocs),
            search_strategy=strategy(), task_name=task.task_name, logger=logger,
            rand_state=rand_state, num_threads=1).clone()
        spaces = context.generate_design_space() if per_design_space else []
        if len(spaces) <= 1:
            contexts.append(context)
            context_task.append(task_id)
            continue
        for k, space in enumerate(spaces):
            trace = space.trace.simplified(remove_postproc=True)
            contexts.append(ms.TuneContext(
                mod=task.dispatched[0], target=task.target,
                space_generator=ms.space_generator.ScheduleFn(
                    _replay(trace), sch_rules=[], postprocs=postprocs),
                search_strategy=strategy(), task_name=f"{task.task_name}[space {k}]",
                logger=logger, rand_state=rand_state + k, num_threads=1).clone())
            context_task.append(task_id)
    return contexts, context_task


def _replay(trace: Any) -> Callable[[Any], None]:
    """A schedule function that rebuilds one design space (its sampling decisions are drawn
    afresh by the search, as for any design space)."""

    def schedule(sch: Any) -> None:
        trace.apply_to_schedule(sch, remove_postproc=True)

    return schedule


@dataclass
class TuningResult:
    network: str
    hardware: str
    cost_model: str
    scheduler: str
    tasks_total: int
    tasks_tuned: list[str]
    trials: int
    errors: int
    search_s: float
    stop_reason: str  # trials | deadline | interrupt | exhausted
    estimated_s: float | None
    untuned: dict[str, Any]
    tuned: dict[str, Any]
    curve: list[CurvePoint]
    database_dir: str
    network_hash: str
    trials_per_task: dict[str, int]
    rejected_by_rules: int = 0

    @property
    def speedup(self) -> float:
        return self.untuned["latency_s"] / self.tuned["latency_s"]


def _e2e(run: dict[str, Any]) -> dict[str, Any]:
    secs = run["run_secs"]
    return {"latency_s": float(np.median(secs)), "run_secs": secs, "compile_s": run["compile_s"],
            "tuned_functions": len(run["tuned_functions"]),
            "tir_functions": run["tir_functions"]}


def tune_network(network: str, profile: HardwareProfile, work_dir: str | Path, trials: int,
                 minutes: float | None = None, cost_model: str = "xgb",
                 scheduler: str = "gradient", flops_share: float = 0.9,
                 trials_per_iter: int | None = None, population: int = 256, seed: int = 0,
                 batch_size: int = 1, input_size: int | None = None, e2e_repeat: int = 20,
                 constraints: bool = True, report: Callable[[str], None] = print,
                 on_trials: Callable[[int], None] | None = None,
                 instant_top: int | None = None) -> TuningResult:
    """Tune `network` on `profile` (see the module docstring). The MetaSchedule JSON database
    (the tuned schedules) is written to `work_dir`. `trials_per_iter` (candidates measured
    per turn of a task) defaults to what gives every tuned task at least two turns.
    `constraints` applies tasks.constraints' rules (drop hopeless candidates unmeasured).
    Scheduler "instant" measures `instant_top` candidates per task (default: the trials spread
    over the tasks) out of `population` ranked by the model (tasks.instant)."""
    from core.tvm_env import load_tvm, structural_hash_hex
    from tasks.measure import Measurer, WorkerFailure
    from tasks.ms_backend import ms_builder, ms_runner
    from tasks.workloads import import_to_relax

    if scheduler not in SCHEDULERS:
        raise TenforgeError(f"unknown scheduler {scheduler!r}; choose one of {SCHEDULERS}")
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    relax_mod = import_to_relax(network, batch_size, input_size)
    relax_json = tvm.ir.save_json(relax_mod)
    target = profile.tvm_target()
    extracted = list(ms.relax_integration.extract_tasks(relax_mod, target))
    from tvm.s_tir import analysis

    shares = [TaskShare(str(t.task_name), float(analysis.estimate_tir_flops(t.dispatched[0])),
                        int(t.weight)) for t in extracted]
    chosen = select_tasks(shares, flops_share)
    report(f"{network}: {len(extracted)} tasks, tuning the {len(chosen)} that carry "
           f">= {flops_share:.0%} of FLOPs x occurrences")
    log = TuningLog([shares[i].name for i in chosen], [float(extracted[i].weight) for i in chosen],
                    report=report, on_trials=on_trials, budget=trials)
    instant = scheduler == "instant"
    rules = rules_for(profile) if constraints and not instant else []
    contexts: list[Any] = []
    if not instant:
        contexts, context_task = tune_contexts(
            [extracted[i] for i in chosen], profile, work_dir, population, seed, rules,
            per_design_space=scheduler == "dual", on_reject=log.note_rejection)
        log.set_contexts(context_task)
    if len(contexts) > len(chosen):
        report(f"dual scheduling: {len(contexts)} (task, design space) pairs")
    if rules:
        report("resource-constraint rules: " + ", ".join(map(str, rules)))
    if trials_per_iter is None:  # every context gets at least two rounds of the budget
        trials_per_iter = max(4, min(64, trials // (2 * max(len(contexts), 1))))
    model: Any = "xgb"
    if cost_model != "xgb" and not instant:
        from models.ms_adapter import learned_cost_model

        model = learned_cost_model(cost_model, profile)
    database = ms.database.JSONDatabase(work_dir=str(work_dir))
    with Measurer(profile) as measurer:
        untuned = measurer.run_network(relax_json, None, repeat=e2e_repeat)
        report(f"untuned end-to-end: {np.median(untuned['run_secs']) * 1e3:.3f} ms")
        log.started = time.monotonic()  # the search budget starts now, after the untuned run
        log.deadline = log.started + 60 * minutes if minutes else None
        with stop_on_signals(log):
            if instant:
                from tasks.instant import instant_tune, measure_top_for

                top = instant_top or measure_top_for(trials, len(chosen))
                log.budget = top * len(chosen)  # what it plans to measure
                report(f"instant: per task, rank {population} sampled candidates with the "
                       f"model and measure the top {top}")
                instant_tune(extracted, chosen, [shares[i].flops for i in chosen], profile,
                             database, cost_model, log, measurer, samples=population,
                             measure_top=top, seed=seed, report=report)
            else:
                ms.tune_tasks(tasks=contexts,
                              task_weights=[log.context_weight(c)
                                            for c in range(len(contexts))],
                              work_dir=str(work_dir),
                              max_trials_global=trials, num_trials_per_iter=trials_per_iter,
                              builder=ms_builder(measurer), runner=ms_runner(measurer),
                              database=database, cost_model=model,
                              measure_callbacks=[
                                  *ms.measure_callback.MeasureCallback.create("default"),
                                  _recorder(log)],
                              task_scheduler=create_scheduler(scheduler, log, seed))
        search_s = time.monotonic() - log.started
        report(f"search ended ({log.final_reason()}) after {log.trials} trials in "
               f"{search_s:.0f} s; compiling with the best schedules found")
        try:
            tuned = measurer.run_network(relax_json, str(work_dir), repeat=e2e_repeat)
        except (RuntimeError, WorkerFailure) as exc:
            raise TenforgeError(f"{network} with the tuned schedules of {work_dir} failed to "
                                f"compile or run: {exc}; earlier tuning results are "
                                "untouched") from None
    result = TuningResult(
        network=network, hardware=profile.name, cost_model=cost_model, scheduler=scheduler,
        tasks_total=len(extracted), tasks_tuned=log.task_names, trials=log.trials,
        errors=log.errors, search_s=search_s, stop_reason=log.final_reason(),
        estimated_s=log.estimated(), untuned=_e2e(untuned), tuned=_e2e(tuned), curve=log.curve,
        database_dir=str(work_dir), network_hash=structural_hash_hex(relax_mod),
        trials_per_task=dict(zip(log.task_names, log.trials_per_task)),
        rejected_by_rules=log.rejected_by_rules)
    report(f"tuned end-to-end: {result.tuned['latency_s'] * 1e3:.3f} ms "
           f"({result.speedup:.2f}x faster than untuned; {result.tuned['tuned_functions']} of "
           f"{result.tuned['tir_functions']} functions from the database)")
    return result
