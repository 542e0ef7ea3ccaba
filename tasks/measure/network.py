"""Whole networks: compile a fused Relax module with the schedules of a tuning database
(the worker times the result end to end, tasks/measure/worker.py)."""

from __future__ import annotations

from typing import Any

from core.tvm_env import GPU_TARGET_KINDS


def compile_network(tvm: Any, fused: Any, database: Any, target: Any) -> tuple[Any, Any]:
    """Build a fused Relax module (tasks.workloads.import_to_relax) with the schedules of
    `database`; returns (executable, the module after the database was applied).

    Not `meta_schedule.relax_integration.compile_relax`: it runs LegalizeOps ...
    AnnotateTIROpPattern ... FuseTIR again, which on an already fused module adds an
    `op_pattern` attribute to every PrimFunc, so their structural hashes no longer match the
    tuned tasks' and every database lookup silently misses (tuned and untuned builds then run
    equally fast: the FACTS.md "20 ms end to end vs 2.3 ms summed" gap).
    """
    import importlib

    from tvm import relax

    gpu = target.kind.name in GPU_TARGET_KINDS
    backend = importlib.import_module("tvm.relax.backend."
                                      f"{'cuda' if gpu else 'cpu_generic'}.pipeline")
    applied: list[Any] = []

    @tvm.transform.module_pass(opt_level=3)
    def pipeline(mod: Any, _ctx: Any) -> Any:
        mod = relax.transform.MetaScheduleApplyDatabase(enable_warning=False)(mod)
        applied.append(mod)
        if gpu:  # untuned GPU kernels need some thread binding to build at all
            from tvm.s_tir import dlight as dl

            mod = dl.ApplyDefaultSchedule(dl.gpu.Matmul(), dl.gpu.GEMV(), dl.gpu.Reduction(),
                                          dl.gpu.GeneralReduction(), dl.gpu.Fallback())(mod)
        return tvm.transform.Sequential([*backend.dataflow_lower_passes(target),
                                         *backend.finalize_passes(target)])(mod)

    with target, database, tvm.transform.PassContext(opt_level=3):
        executable = relax.build(fused, target=target, relax_pipeline=pipeline)
    return executable, applied[0]
