"""Where and how a task's reference outputs are made: the unscheduled function, built once per
task and worker, whose outputs every candidate's run is checked against.

An unscheduled function is a loop nest per block, run by one thread. For a GPU task that
costs most of a batch: an H200's batch-8 float16 convolutions (1-2 GFLOP) spent 28-75 s in
it on one host core (session 88; bench/reference_speed.py). Two changes, neither of which
changes a single output bit (each output element is still summed by one thread, in the same
order, with the same instructions):
- GPU tasks build the reference for this host's own CPU (`mcpu`), not a generic x86-64: the
  generic target has no F16C, so every float16 value went through a software conversion;
- each block's outer data-parallel loops are fused and run in parallel, on the threads the
  runner has (one on a one-thread CPU profile, every usable core behind a GPU).
"""

from __future__ import annotations

from typing import Any

from core.tvm_env import GPU_TARGET_KINDS


def reference_target(target: dict[str, Any]) -> dict[str, Any] | None:
    """Where the unscheduled function runs to make a task's reference outputs: None = on the
    target itself (a CPU, here or over RPC); for a GPU, this host's CPU (`llvm` for its own
    `mcpu`), since an unscheduled GPU kernel has no thread bindings and cannot build (on an
    H100 the attempt crashed the worker once per task, each crash paying a worker restart)."""
    if target["kind"] not in GPU_TARGET_KINDS:
        return None
    from tvm.target import codegen

    return {"kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu())}


def _data_parallel_prefix(sch: Any, block: Any) -> list[Any]:
    """The block's outermost loops that each bind one data-parallel block iterator and nothing
    else: the loops whose iterations write disjoint outputs. Empty where the block is not
    directly under its innermost loop or binds an iterator to anything but a plain loop
    variable (an opaque block has no iterators, so none of its loops qualifies)."""
    from tvm import s_tir, tirx

    loops = sch.get_loops(block)
    if not loops:
        return []
    realize = sch.get(loops[-1]).body
    if not isinstance(realize, s_tir.SBlockRealize):
        return []
    spatial, other = set(), set()
    for iter_var, value in zip(realize.block.iter_vars, realize.iter_values):
        if not isinstance(value, tirx.Var):
            return []
        (spatial if iter_var.iter_type == tirx.IterVar.DataPar else other).add(value.name)
    prefix = []
    for loop in loops:
        name = sch.get(loop).loop_var.name
        if name not in spatial or name in other:
            break
        prefix.append(loop)
    return prefix


def parallel_outer_loops(mod: Any) -> Any:
    """`mod` with each root-level block's data-parallel outer loops fused into one parallel
    loop; `mod` itself wherever that cannot be scheduled (the reference is then slower, never
    wrong)."""
    from tvm import s_tir

    try:
        sch = s_tir.Schedule(mod)
        for block in sch.get_child_blocks(sch.get_sblock("root")):
            prefix = _data_parallel_prefix(sch, block)
            if prefix:
                sch.parallel(sch.fuse(*prefix) if len(prefix) > 1 else prefix[0])
        return sch.mod
    except Exception:  # noqa: BLE001 - any schedule error: the unscheduled function is right too
        return mod
