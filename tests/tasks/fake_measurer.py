"""A Measurer test double: deterministic latencies from the candidate (its FLOPs and a hash of
its schedule), a chosen share of failures, nothing compiled. Like MetaSchedule's dummy runner:
collect's bookkeeping (what is pending, batches, commits, resumes, error rows) tests in
milliseconds; tests/tasks/test_measure.py keeps the real builds and runs."""

from __future__ import annotations

import hashlib
from typing import Any, Callable, Iterator, Sequence

from core.records import MeasureJob, MeasureResult


class FakeMeasurer:
    """Drop-in for tasks.measure.Measurer (what measure_pending uses of it)."""

    def __init__(self, profile: Any, settings: Any = None, build_workers: int = 2,
                 fail_every: int = 0, keep_asm: bool = False):
        self.profile, self.fail_every, self.keep_asm = profile, fail_every, keep_asm
        self.batches: list[list[int]] = []

    def __enter__(self) -> "FakeMeasurer":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    @staticmethod
    def latency(job: MeasureJob) -> float:
        """~1 GFLOP/s, times a factor in [1, 2) fixed by the schedule."""
        spread = int(hashlib.sha1(job.trace_json.encode()).hexdigest()[:8], 16) / 2**32
        return max(job.flops, 1.0) * 1e-9 * (1.0 + spread)

    @staticmethod
    def asm(job: MeasureJob) -> tuple[float, ...]:
        """Assembly columns of a build that was not: the candidate id, then zeros."""
        from models.asm_features import ASM_DIM

        return (float(job.candidate_id),) + (0.0,) * (ASM_DIM - 1)

    def measure(self, jobs: Sequence[MeasureJob],
                on_result: Callable[[MeasureResult], None] | None = None
                ) -> list[MeasureResult]:
        self.batches.append([j.candidate_id for j in jobs])
        results = []
        for job in jobs:
            if self.fail_every and job.candidate_id % self.fail_every == 0:
                result = MeasureResult(job.candidate_id, error_kind="run_error",
                                       error_msg="fake failure", build_s=0.0)
            else:
                result = MeasureResult(job.candidate_id, run_secs=(self.latency(job),) * 3,
                                       verified=True, build_s=0.0, run_wall_s=0.0,
                                       asm=self.asm(job) if self.keep_asm else None)
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def measure_chunks(self, chunks: Sequence[Sequence[MeasureJob]],
                       on_result: Callable[[MeasureResult], None] | None = None
                       ) -> Iterator[list[MeasureResult]]:
        for jobs in chunks:
            yield self.measure(jobs, on_result)
