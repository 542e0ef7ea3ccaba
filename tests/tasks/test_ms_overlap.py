"""Builds overlapping the next task's search (tasks.ms_overlap): real MetaSchedule search and
schedulers, a fake Measurer that builds by sleeping and checks that no timing shares the machine
with a build."""

from __future__ import annotations

import threading
import time
import zlib
from typing import Any

import pytest

from tasks.tuning import SEARCH_SCHEDULERS, TuningLog

BUILD_S = 0.03  # a fake batch's build time


class FakeMeasurer:
    """Measurer's protocol for tasks.ms_overlap. A build takes BUILD_S; a module whose text
    hashes to 0 mod `fail_every` fails to build; a run's latency comes from the module's hash."""

    def __init__(self, fail_every: int = 0, wait_for_search_s: float = 0.0):
        self.fail_every = fail_every
        # With wait_for_search_s, a build also holds until the search predicts during it (at
        # most that long): on a slow or busy CPU the search's next predict came more than
        # BUILD_S after a build began (the Zen 1, session 79), so overlap went unseen.
        self.wait_for_search_s = wait_for_search_s
        self.searched = threading.Event()
        self.building = False
        self.count = 0
        self.latency: dict[str, float] = {}
        self.runs_while_building = 0
        self.runs = 0
        self.builds = 0
        self.niceness = 0

    def yield_builds(self, niceness: int = 19) -> None:
        self.niceness = niceness

    def build_requests(self, mod_jsons: list[str]) -> list[dict[str, Any]]:
        requests = []
        for mod_json in mod_jsons:
            self.count += 1
            requests.append({"artifact": f"/nonexistent/mod-{self.count}/lib.so",
                             "digest": zlib.crc32(mod_json.encode())})
        return requests

    def build_requested(self, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.searched.clear()
        self.building = True
        time.sleep(BUILD_S)
        if self.wait_for_search_s:
            self.searched.wait(self.wait_for_search_s)
        self.builds += 1
        outcomes = []
        for r in requests:
            if self.fail_every and r["digest"] % self.fail_every == 0:
                outcomes.append({"error_kind": "build_error", "error_msg": "no such register"})
            else:
                self.latency[r["artifact"]] = 1e-3 * (1 + r["digest"] % 1000 / 1000)
                outcomes.append({"artifact": r["artifact"]})
        self.building = False
        return outcomes

    def run_module(self, artifact: str, args: list[dict[str, Any]]) -> dict[str, Any]:
        assert args and all("shape" in a and "dtype" in a for a in args)
        self.runs += 1
        self.runs_while_building += self.building
        return {"run_secs": [self.latency[artifact]]}


def spying_cost_model(measurer: FakeMeasurer, predicted_while: list[bool]) -> Any:
    """A random cost model that notes, at each predict (the search), whether a build is in
    flight."""
    import numpy as np
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.cost_model import PyCostModel

    @derived_object
    class Spy(PyCostModel):
        def load(self, path: str) -> None:
            pass

        def save(self, path: str) -> None:
            pass

        def update(self, context, candidates, results) -> None:
            pass

        def predict(self, context, candidates) -> np.ndarray:
            predicted_while.append(measurer.building)
            if measurer.building:
                measurer.searched.set()
            return np.random.default_rng(len(predicted_while)).random(len(candidates))

    return Spy()


def _tune(tmp_path, scheduler: str, overlap: bool, measurer: FakeMeasurer, trials: int = 40,
          n_tasks: int = 5, deadline_s: float | None = None) -> tuple[TuningLog, list[bool]]:
    from tvm.s_tir import meta_schedule as ms

    from tasks.ms_overlap import OverlappedMeasuring
    from tasks.schedulers import create_scheduler
    from tasks.tuning.log import recorder
    from tests.tasks.ms_doubles import matmul_contexts

    log = TuningLog([f"matmul_{i}" for i in range(n_tasks)], [1.0] * n_tasks, budget=trials,
                    report=lambda _: None)
    log.started = time.monotonic()
    if deadline_s is not None:
        log.deadline = log.started + deadline_s
    measuring = OverlappedMeasuring(measurer, log.add_measure_time)
    predicted_while: list[bool] = []
    ms.tune_tasks(tasks=matmul_contexts(n_tasks), task_weights=[1.0] * n_tasks,
                  work_dir=str(tmp_path), max_trials_global=trials, num_trials_per_iter=4,
                  builder=measuring.builder(), runner=measuring.runner(),
                  database=ms.database.MemoryDatabase(),
                  cost_model=spying_cost_model(measurer, predicted_while),
                  measure_callbacks=[recorder(log)],
                  task_scheduler=create_scheduler(scheduler, log, seed=0, overlap=overlap))
    measuring.wait_for_builds()
    assert not measuring.batches and not measuring.by_artifact  # every result was taken
    return log, predicted_while


@pytest.mark.parametrize("scheduler", SEARCH_SCHEDULERS)
def test_the_search_goes_on_while_a_batch_builds_and_runs_stay_alone(scheduler, tmp_path):
    measurer = FakeMeasurer(wait_for_search_s=1.0)
    log, predicted_while = _tune(tmp_path, scheduler, True, measurer)
    assert log.trials == 40 and measurer.runs == 40 and log.errors == 0
    assert measurer.niceness > 0  # builds yield the CPU to the search
    assert measurer.runs_while_building == 0  # timings never share the machine with a build
    assert any(predicted_while)  # the next task was searched while a batch built
    assert log.measure_s > 0  # the search's waits for builds and runs are clocked


@pytest.mark.parametrize("scheduler", SEARCH_SCHEDULERS)
def test_without_the_schedulers_overlap_the_batches_go_in_lock_step(scheduler, tmp_path):
    """The scheduler joins the batch in flight before it hands out the next task: the same
    builder and runner then overlap nothing, as MetaSchedule's order is."""
    measurer = FakeMeasurer()
    log, predicted_while = _tune(tmp_path, scheduler, False, measurer)
    assert log.trials == 40 and measurer.runs_while_building == 0
    # the blind first pass (gradient) hands out every task before joining any
    searched_alone = predicted_while[5 * 8:] if scheduler == "gradient" else predicted_while
    assert searched_alone and not any(searched_alone)


def test_a_failed_build_is_the_candidates_error_with_the_builds_message(tmp_path):
    from tvm.s_tir import meta_schedule as ms

    from tasks.ms_overlap import OverlappedMeasuring
    from tests.tasks.ms_doubles import matmul_contexts

    measuring = OverlappedMeasuring(FakeMeasurer(fail_every=1))  # every build fails
    context = matmul_contexts(1)[0]
    mod = context.mod
    built = measuring.builder().build([ms.builder.BuilderInput(mod, context.target)])
    assert built[0].error_msg is None  # the builder cannot know yet
    args = ms.arg_info.ArgInfo.from_prim_func(mod["main"])
    futures = measuring.runner().run([ms.runner.RunnerInput(built[0].artifact_path, "cpu", args)])
    result = futures[0].result()
    assert result.run_secs is None and result.error_msg == "build_error: no such register"


def test_a_deadline_with_overlapping_builds_stops_within_the_batch_in_flight(tmp_path):
    measurer = FakeMeasurer()
    log, _ = _tune(tmp_path, "gradient", True, measurer, trials=100_000, n_tasks=25,
                   deadline_s=1.0)
    assert log.final_reason() == "deadline"
    assert log.trials == measurer.runs and measurer.runs_while_building == 0
    # what was built is what was run and recorded: nothing in flight was lost at the stop
    assert measurer.builds * 4 == log.trials


def test_a_crashed_build_thread_raises_on_the_search_thread():
    from tasks.ms_overlap import OverlappedMeasuring

    class Crashing(FakeMeasurer):
        def build_requested(self, requests):
            raise OSError("disk full")

    measuring = OverlappedMeasuring(Crashing())
    measuring.start_build(["a", "b"])
    with pytest.raises(OSError, match="disk full"):
        measuring.settle()


@pytest.mark.slow
def test_a_real_tuning_run_with_overlapping_builds_measures_its_budget_and_compiles(tmp_path):
    """tiny_cnn on this machine's one-thread profile, MetaSchedule's XGB, real builds and
    runs: every trial is measured and the network compiles from what the search found."""
    from tasks.hardware import resolve_profile
    from tasks.tuning import tune_network

    said: list[str] = []
    result = tune_network("tiny_cnn", resolve_profile("local-1t"), tmp_path / "work",
                          trials=24, trials_per_iter=4, flops_share=1.0, e2e_repeat=3,
                          hold_top=0, overlap_builds=True, report=said.append)
    assert result.overlap_builds and result.trials == 24 and result.stop_reason == "trials"
    assert result.errors < result.trials
    assert result.tuned["tuned_functions"] >= 1 and result.estimated_s is not None
    assert any("builds overlapping the search" in line for line in said)
