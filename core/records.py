"""Task and measurement records: what crosses every layer (tasks measure them, storage keeps
them, MetaSchedule databases import and export them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskInfo:
    """One tuning task of a network, with the TIR module serialized (so features can be redone)."""

    task_name: str
    workload_hash: str  # MetaSchedule's structural hash (hex), as in database_workload.json
    flops: float
    weight: int  # occurrences in the network
    mod_json: str  # tvm.ir.save_json of the task's IRModule


@dataclass(frozen=True)
class MeasureJob:
    candidate_id: int
    workload_hash: str
    mod_json: str  # the task's (unscheduled) IRModule
    trace_json: str
    flops: float


@dataclass(frozen=True)
class MeasureResult:
    candidate_id: int
    run_secs: tuple[float, ...] = ()
    error_kind: str | None = None  # None, or one of the measurements.error_kind values
    error_msg: str | None = None
    verified: bool | None = None  # outputs matched the reference (None: not checked)
    build_s: float | None = None
    run_wall_s: float | None = None
    # models/asm_features.py's columns of the built code, when the measurer keeps them
    asm: tuple[float, ...] | None = None
