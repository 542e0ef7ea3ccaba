"""DNN -> Relax -> MetaSchedule tuning tasks (torch.export, TVM's PyTorch frontend).

A task is one fused TIR function of the network; identical functions (same structural hash)
are one task whose `weight` counts how often the network runs it.
"""

from __future__ import annotations

from typing import Any

from core.records import TaskInfo
from core.tvm_env import load_tvm
from tasks.networks import build_network, network_def


def import_to_relax(network: str, batch: int, size: int | None = None) -> Any:
    """The network as a legalized, fused Relax IRModule (parameters detached)."""
    import torch

    tvm = load_tvm("llvm")
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    model, inputs = build_network(network, batch, size)
    with torch.no_grad():
        exported = torch.export.export(model, inputs)
    mod = from_exported_program(exported, keep_params_as_input=True)
    mod, _params = relax.frontend.detach_params(mod)
    passes = tvm.transform.Sequential([
        relax.transform.DecomposeOpsForInference(),
        relax.transform.LegalizeOps(),  # without it extract_tasks finds nothing
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ])
    return passes(mod)


def extract_network_tasks(network: str, batch: int, size: int | None, target: dict) -> list[TaskInfo]:
    """Import `network` and split it into MetaSchedule tuning tasks for `target`."""
    tvm = load_tvm(target)
    from tvm.s_tir import analysis
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import shash2hex
    from tvm.target import Target

    network_def(network)  # validate the name before the expensive part
    relax_mod = import_to_relax(network, batch, size)
    tasks = []
    for task in ms.relax_integration.extract_tasks(relax_mod, Target(target)):
        mod = task.dispatched[0]
        tasks.append(TaskInfo(
            task_name=str(task.task_name),
            workload_hash=shash2hex(mod),
            flops=float(analysis.estimate_tir_flops(mod)),
            weight=int(task.weight),
            mod_json=tvm.ir.save_json(mod),
        ))
    return tasks
