"""Test doubles for MetaSchedule tuning without compiling: a builder that builds nothing and a
runner that returns a deterministic latency per scheduled program (from its structural hash),
after a fixed delay, like MetaSchedule's dummy runner. The search, the schedulers and the
callbacks are real; only measuring is faked."""

from __future__ import annotations

import time
from typing import Any


def fake_builder() -> Any:
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.builder import BuilderResult, PyBuilder
    from tvm.s_tir.meta_schedule.utils import shash2hex

    @derived_object
    class FakeBuilder(PyBuilder):
        def build(self, build_inputs: list) -> list:
            return [BuilderResult(f"fake-{shash2hex(b.mod)}", None) for b in build_inputs]

    return FakeBuilder()


def fake_runner(seconds_per_run: float, started: list[float]) -> Any:
    """Each `run` call appends its start time to `started` (one call = one batch)."""
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.runner import PyRunner, RunnerFuture, RunnerResult

    @derived_object
    class FakeRunner(PyRunner):
        def run(self, runner_inputs: list) -> list:
            started.append(time.monotonic())
            futures = []
            for runner_input in runner_inputs:
                time.sleep(seconds_per_run)
                digest = int(str(runner_input.artifact_path)[-8:], 16)
                result = RunnerResult([1e-3 * (1 + digest % 1000 / 1000)], None)
                futures.append(RunnerFuture(lambda: True, lambda r=result: r))
            return futures

    return FakeRunner()


def matmul_contexts(n_tasks: int, population: int = 8) -> list[Any]:
    """`n_tasks` small matmul tuning contexts of different shapes (a network's worth of
    tasks, cheap to schedule)."""
    from core.tvm_env import load_tvm

    load_tvm("llvm")
    from tvm import te
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    contexts = []
    for i in range(n_tasks):
        m, k = 16 + 4 * (i % 8), 16 + 8 * (i // 8)
        a = te.placeholder((m, k), name="a")
        b = te.placeholder((k, 32), name="b")
        r = te.reduce_axis((0, k), name="r")
        c = te.compute((m, 32), lambda x, y: te.sum(a[x, r] * b[r, y], axis=r), name="c")
        contexts.append(ms.TuneContext(
            mod=te.create_prim_func([a, b, c]), target=Target({"kind": "llvm", "num-cores": 1}),
            space_generator="post-order-apply",
            search_strategy=ms.search_strategy.EvolutionarySearch(
                population_size=population, init_min_unmeasured=population),
            task_name=f"matmul_{i}", rand_state=i + 1, num_threads=1).clone())
    return contexts
