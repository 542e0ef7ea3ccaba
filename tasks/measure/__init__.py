"""Build and run candidates in long-lived worker processes, surviving crashes and hangs.

Why not MetaSchedule's LocalBuilder/LocalRunner: they start a fresh process pool for every
batch and each new worker pays the ~34 s tensor-intrinsics import (FACTS.md), so every batch
costs a fixed ~37 s. Here each worker starts once, imports only what its target needs
(core.tvm_env.load_tvm), and serves requests over a pipe until it dies. A request that
crashes its worker (segfault) or outlives its timeout kills only that worker: the candidate is
recorded as build_crash / run_crash / *_timeout and a fresh worker takes the next request.
A tuning run also cuts builds far slower than its others (`build_cap`: `build_cut`).

Protocol per batch: builds run in parallel on `build_workers` processes; then runs go one at
a time on a single runner process while nothing else runs, so timings are not disturbed by
compiles. Before a task's first run the runner prepares its inputs (seeded random values) and
reference outputs (the unscheduled function, built and run once); every run's outputs are
compared with them (`wrong_result` when they differ).

Modules: `protocol` (what both sides share), `worker` (the child process), `process` (one
worker seen from the parent), `measurer` (batches over the workers), `network` (whole-network
compile and end-to-end timing), `build_cap` (a tuning run's cut for straggling builds).
"""

from core.records import MeasureJob, MeasureResult
from tasks.measure.build_cap import BuildCap
from tasks.measure.measurer import Measurer
from tasks.measure.network import compile_network
from tasks.measure.process import WorkerFailure

__all__ = ["BuildCap", "MeasureJob", "MeasureResult", "Measurer", "WorkerFailure",
           "compile_network"]
