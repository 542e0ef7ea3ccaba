"""MetaSchedule's Builder and Runner, served by tenforge's long-lived measurement workers.

MetaSchedule's LocalBuilder starts a fresh process pool for every batch and each worker pays
the ~34 s tensor-intrinsics import (FACTS.md), so a tuning run with the default builder spends
most of its time importing (or records only timeouts). These adapters hand MetaSchedule's
build and run requests to a `tasks.measure.Measurer` instead: workers start once, import only
what the target needs, survive crashes and hangs (a crashed build or run becomes an error
result, as MetaSchedule expects), and time runs with the profile's measurement settings.

    with Measurer(profile) as measurer:
        ms.tune_tasks(..., builder=ms_builder(measurer), runner=ms_runner(measurer))
"""

from __future__ import annotations

import time
from typing import Any, Callable

from tasks.measure import Measurer

Clock = Callable[[float], None]  # told the seconds each build or run batch took


def ms_builder(measurer: Measurer, clock: Clock | None = None) -> Any:
    """A MetaSchedule PyBuilder that compiles on `measurer`'s build workers, in parallel;
    `clock` hears how long each batch took (a tuning run's measuring share)."""
    import tvm
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder

    @derived_object
    class WorkerBuilder(PyBuilder):
        def build(self, build_inputs: list) -> list:
            started = time.monotonic()
            outcomes = measurer.build_modules([tvm.ir.save_json(b.mod) for b in build_inputs])
            if clock is not None:
                clock(time.monotonic() - started)
            return [BuilderResult(None, f"{o['error_kind']}: {o['error_msg']}")
                    if "error_kind" in o else BuilderResult(o["artifact"], None)
                    for o in outcomes]

    return WorkerBuilder()


def ms_runner(measurer: Measurer, clock: Clock | None = None) -> Any:
    """A MetaSchedule PyRunner that times each artifact on `measurer`'s runner, one at a time
    (runs never overlap builds' timing: MetaSchedule builds a whole batch before running it).
    Runs happen in `run`; the futures it returns are already done. `clock` as for ms_builder."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.runner import PyRunner, RunnerFuture

    @derived_object
    class WorkerRunner(PyRunner):
        def run(self, runner_inputs: list) -> list:
            started = time.monotonic()
            futures = []
            for runner_input in runner_inputs:
                out = measurer.run_module(str(runner_input.artifact_path), run_args(runner_input))
                futures.append(RunnerFuture(lambda: True, lambda r=runner_result(out): r))
            if clock is not None:
                clock(time.monotonic() - started)
            return futures

    return WorkerRunner()


def run_args(runner_input: Any) -> list[dict[str, Any]]:
    """A MetaSchedule RunnerInput's arguments as Measurer.run_module takes them."""
    return [{"shape": [int(d) for d in a.shape], "dtype": str(a.dtype)}
            for a in runner_input.args_info]


def runner_result(outcome: dict[str, Any]) -> Any:
    """A Measurer run outcome ({run_secs} or {error_kind, error_msg}) as MetaSchedule's
    RunnerResult."""
    from tvm.s_tir.meta_schedule.runner import RunnerResult

    if "error_kind" in outcome:
        return RunnerResult(None, f"{outcome['error_kind']}: {outcome['error_msg']}")
    return RunnerResult(outcome["run_secs"], None)
