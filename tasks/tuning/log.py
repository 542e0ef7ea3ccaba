"""The tuning log: every measured batch in, the curve, best-so-far per task and why the search
stopped out; and the hooks that feed it (MetaSchedule's measure callback, signals)."""

from __future__ import annotations

import math
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import numpy as np

from core.progress import bar


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
    measure_s: float = 0.0  # of the search's wall time, building and running candidates
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

    def unmeasured_tasks(self) -> list[int]:
        """The tasks with no valid measurement yet (the estimate waits for them)."""
        return [i for i, b in enumerate(self.best) if math.isinf(b)]

    def estimated(self) -> float | None:
        if self.unmeasured_tasks():
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

    def add_measure_time(self, seconds: float) -> None:
        """The measurer's clock (tasks.ms_backend): the rest of the wall time is searching."""
        self.measure_s += seconds

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

    def search_failed(self, exc: BaseException) -> None:
        """MetaSchedule's search raised: keep what it measured (every batch is in the tuning
        database once its callbacks ran) and go on to compile, as a deadline would."""
        self.stop_reason = "error"
        last_line = (str(exc).strip().splitlines() or ["(no message)"])[-1][:300]
        self.report(f"WARNING: the search failed after {self.trials} trials "
                    f"({type(exc).__name__}: {last_line}); compiling with what it measured")

    def final_reason(self) -> str:
        """Why the search ended, as tuning_runs.stop_reason records it."""
        if self.stop_reason:
            return self.stop_reason
        return "trials" if self.budget is not None and self.trials >= self.budget \
            else "exhausted"


def recorder(log: TuningLog) -> Any:
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
def survive_search_errors(log: TuningLog) -> Iterator[None]:
    """A search that crashes inside MetaSchedule (its C++ checks raise RuntimeError subclasses:
    tvm.error.InternalError, TVMError) ends the search, not the run: what was measured stays
    and is compiled, timed and recorded, with stop_reason 'error'."""
    try:
        yield
    except RuntimeError as exc:
        log.search_failed(exc)


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
