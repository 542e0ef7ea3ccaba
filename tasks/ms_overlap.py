"""MetaSchedule's Builder and Runner with a batch's builds overlapping the next task's search.

MetaSchedule measures in lock step: search a task, build its batch, run it, and only then
search the next one. The builds use every core (one worker each), but the search does not: on
the 2-vCPU Zen 4 the search phases ran at ~1.5 cores and builds were half of a tuning run's CPU
(docs/tuning-results.md, sixty-seventh session). Here a batch builds in a background thread
while the scheduler hands out the next task and MetaSchedule searches it:

    search A | build A ... | run A | build B ...   | run B | ...
             | search B    |       | search C      |       |

- Runs stay alone: a batch is timed at the start of the next `build` call (the search of the
  next task has ended, and no build is in flight) or when the scheduler joins it, whichever
  comes first. So a timing never shares the machine with a build or a search.
- The builder returns at once, with the artifact paths the builds will write (Measurer assigns
  them up front). A build that fails becomes the candidate's runner error, with the build's
  message: MetaSchedule treats both alike (no latency, the cost model learns it is bad).
- Builds run niced (Measurer.yield_builds): they take the CPU the search leaves idle and do
  not slow it down. Whatever they could not do meanwhile is done, at full speed, while the
  next `build` call waits for them.
- The scheduler must not join the batch in flight before handing out the next task, or nothing
  overlaps: tasks.schedulers' `overlap` joins every batch but the last one and does not hand
  out the task whose batch is in flight. The cost model therefore learns each batch's results
  one search later than in lock step.

    with Measurer(profile) as measurer:
        measuring = OverlappedMeasuring(measurer)
        ms.tune_tasks(..., builder=measuring.builder(), runner=measuring.runner(),
                      task_scheduler=create_scheduler(..., overlap=True))
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from tasks.measure import Measurer
from tasks.ms_backend import Clock, run_args, runner_result


@dataclass
class _Batch:
    """One builder call's candidates: built in the background, then run on the main thread."""

    artifacts: list[str]
    built: threading.Event = field(default_factory=threading.Event)
    outcomes: list[dict[str, Any]] = field(default_factory=list)  # the build's, in order
    failure: BaseException | None = None  # the build thread's own crash, raised on settling
    args: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # artifact -> arg info
    results: dict[str, dict[str, Any]] = field(default_factory=dict)  # artifact -> run outcome
    ran: bool = False


class OverlappedMeasuring:
    """The shared state of one tuning run's builder and runner (see the module docstring).
    `clock` hears the seconds the search waited for measuring: the builds it could not hide
    and every run."""

    def __init__(self, measurer: Measurer, clock: Clock | None = None):
        self.measurer = measurer
        # Builds yield to the search. Unniced, two build processes and the search's two threads
        # shared the 2-vCPU Zen 4 evenly: the search phases took 246 s instead of 158 and the
        # run was 13% slower than lock step (mobilenet_v2, seed 0, docs/tuning-results.md).
        measurer.yield_builds()
        self.clock = clock
        self.batches: list[_Batch] = []  # built or building, not run yet (at most one builds)
        self.by_artifact: dict[str, _Batch] = {}

    # ------------------------------------------------------------- the protocol's halves

    def start_build(self, mod_jsons: list[str]) -> list[str]:
        """Settle what is in flight, then start building `mod_jsons` in the background; returns
        the artifact paths the builds will write, in order."""
        self.settle()
        requests = self.measurer.build_requests(mod_jsons)
        batch = _Batch([r["artifact"] for r in requests])
        for artifact in batch.artifacts:
            self.by_artifact[artifact] = batch

        def build() -> None:
            try:
                batch.outcomes = self.measurer.build_requested(requests)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the main thread
                batch.failure = exc
            finally:
                batch.built.set()

        # a daemon: an aborted run (a second Ctrl-C) must not wait for a build to exit
        threading.Thread(target=build, name="tenforge-overlapped-build", daemon=True).start()
        self.batches.append(batch)
        return batch.artifacts

    def expect_run(self, artifact: str, args: list[dict[str, Any]]) -> None:
        """MetaSchedule will want `artifact` timed with these arguments (its runner inputs)."""
        self.by_artifact[artifact].args[artifact] = args

    def done(self, artifact: str) -> bool:
        batch = self.by_artifact.get(artifact)  # gone: its result was taken
        return batch is None or batch.ran

    def result(self, artifact: str) -> dict[str, Any]:
        """The run outcome of `artifact` ({run_secs} or {error_kind, error_msg}), timing its
        batch first if that has not happened yet."""
        batch = self.by_artifact[artifact]
        if not batch.ran:
            self.settle()
        del self.by_artifact[artifact]
        return batch.results[artifact]

    def settle(self) -> None:
        """Wait for every batch in flight to build, then time its candidates, one at a time."""
        started = time.monotonic()
        while self.batches:
            batch = self.batches.pop(0)
            batch.built.wait()
            if batch.failure is not None:
                raise batch.failure
            for artifact, outcome in zip(batch.artifacts, batch.outcomes):
                if artifact not in batch.args:  # MetaSchedule never asked (none so far)
                    continue
                if "error_kind" in outcome:
                    batch.results[artifact] = outcome
                else:
                    batch.results[artifact] = self.measurer.run_module(artifact,
                                                                       batch.args[artifact])
            batch.ran = True
        if self.clock is not None:
            self.clock(time.monotonic() - started)

    def wait_for_builds(self) -> None:
        """Block until no build is in flight (not timing anything): after the search, whatever
        builds next (a pick for an unmeasured task, the hold) uses the same build workers."""
        for batch in self.batches:
            batch.built.wait()

    # ------------------------------------------------------------- MetaSchedule's classes

    def builder(self) -> Any:
        """A PyBuilder that starts each batch's builds and returns at once."""
        import tvm
        from tvm.ir.utils import derived_object
        from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder

        measuring = self

        @derived_object
        class OverlappedBuilder(PyBuilder):
            def build(self, build_inputs: list) -> list:
                artifacts = measuring.start_build([tvm.ir.save_json(b.mod) for b in build_inputs])
                return [BuilderResult(a, None) for a in artifacts]

        return OverlappedBuilder()

    def runner(self) -> Any:
        """A PyRunner whose futures time their batch when it is settled (see `settle`)."""
        from tvm.ir.utils import derived_object
        from tvm.s_tir.meta_schedule.runner import PyRunner, RunnerFuture

        measuring = self

        @derived_object
        class OverlappedRunner(PyRunner):
            def run(self, runner_inputs: list) -> list:
                futures = []
                for runner_input in runner_inputs:
                    artifact = str(runner_input.artifact_path)
                    measuring.expect_run(artifact, run_args(runner_input))
                    futures.append(RunnerFuture(
                        lambda a=artifact: measuring.done(a),
                        lambda a=artifact: runner_result(measuring.result(a))))
                return futures

        return OverlappedRunner()
