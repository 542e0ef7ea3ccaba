"""Builds that run ahead of the runs, for a collect behind a GPU.

A collect measures in chunks (16 candidates): the build workers build a chunk, the runner runs
it, and each chunk is committed to the store. Chunk by chunk, the builders idle while a chunk
waits for its slowest build: on the H200 a float16 tensor-core kernel builds in 2.2 s at the
median and up to 30 s (nvcc), and a batch took its slowest build plus ~5 s (session 90,
docs/collection-performance.md). A BuildStream is one pool of build threads over all of a
collect's chunks: while the runner works through chunk k, the builders already build chunk
k+1 (`ahead` chunks at most, so artifacts on disk stay bounded). A CPU's collect never does
this: its timings would share the CPU with the builds (Measurer's `overlap_builds`).
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any, Callable, Sequence

from core.records import MeasureJob

THREAD_PREFIX = "build-stream-"
# build(worker, job) -> the build's outcome (a dict); it must not raise: a raising build
# would leave its candidate without an outcome, so it is wrapped (an error outcome instead).
BuildOne = Callable[[Any, MeasureJob], dict]


class BuildStream:
    """Build `chunks` on `builders` (one thread each), at most `ahead` chunks past the one
    the caller is running (`start_chunk`); `outcome(job)` waits for a job's build."""

    def __init__(self, builders: Sequence[Any], build: BuildOne,
                 chunks: Sequence[Sequence[MeasureJob]], ahead: int = 1):
        self._build, self._ahead = build, ahead
        self._cond = threading.Condition()
        self._todo: deque[tuple[int, MeasureJob]] = deque(
            (index, job) for index, jobs in enumerate(chunks) for job in jobs)
        self._outcomes: dict[int, dict] = {}  # candidate_id -> outcome, until taken
        self._current = 0
        self._stopped = False
        # daemon: a build that hangs past close() must not keep the process alive
        self._threads = [threading.Thread(target=self._drain, args=(worker,), daemon=True,
                                          name=f"{THREAD_PREFIX}{i}")
                         for i, worker in enumerate(builders)]
        for thread in self._threads:
            thread.start()

    def _next(self) -> MeasureJob | None:
        with self._cond:
            while (not self._stopped and self._todo
                   and self._todo[0][0] > self._current + self._ahead):
                self._cond.wait()
            if self._stopped or not self._todo:
                return None
            return self._todo.popleft()[1]

    def _drain(self, worker: Any) -> None:
        while (job := self._next()) is not None:
            try:
                outcome = self._build(worker, job)
            except Exception as error:  # noqa: BLE001 - recorded as the candidate's error
                outcome = {"error_kind": "build_error", "error_msg": f"{error!r}"}
            with self._cond:
                self._outcomes[job.candidate_id] = outcome
                self._cond.notify_all()

    def start_chunk(self, index: int) -> None:
        """The caller now runs chunk `index`: builds may go on up to chunk index + ahead."""
        with self._cond:
            self._current = index
            self._cond.notify_all()

    def outcome(self, job: MeasureJob) -> dict:
        """`job`'s build outcome, once built (each is handed out once)."""
        with self._cond:
            while job.candidate_id not in self._outcomes:
                if self._stopped:
                    raise RuntimeError("build stream closed")
                self._cond.wait()
            return self._outcomes.pop(job.candidate_id)

    def close(self) -> None:
        """No new builds start; builds under way finish (or fail when their workers stop)."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
