"""DNN -> Relax -> MetaSchedule tuning tasks (torch.export, TVM's PyTorch frontend).

A task is one fused TIR function of the network; identical functions (same structural hash)
are one task whose `weight` counts how often the network runs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from core.errors import TenforgeError
from core.graphs import (
    BLOCKS,
    CONV_LAYOUTS,
    FAST_MATH_GRAPHS,
    MIXED_PRECISION,
    PACKED_MATMULS,
    check_graph,
)
from core.records import TaskInfo
from core.tvm_env import load_tvm
from tasks.batch_norm_fold import batch_norm_into_conv
from tasks.blocked_conv import (
    clip_as_max_min,
    depthwise_as_grouped,
    legalize_conv2d,
    reduction_before_layer_norm_unblocked,
)
from tasks.blocked_matmul import pack_weight_matmuls
from tasks.fast_math import fast_math_legalizations
from tasks.networks import build_network
from tasks.sources import ZOO, Workload


def import_to_relax(network: str | Workload, batch: int, size: int | None = None,
                    graph: str = "exported") -> Any:
    """The network as a legalized, fused Relax IRModule (parameters detached)."""
    return import_with_weights(network, batch, size, graph)[0]


def input_signature(mod: Any) -> list[tuple[list[int], str]]:
    """(shape, dtype) of each input of `main` (the weights, which follow them, left out)."""
    main = mod["main"]
    count = int(main.attrs["num_input"]) if main.attrs and "num_input" in main.attrs else 1
    return [([int(d) for d in p.ty.shape], str(p.ty.dtype)) for p in main.params[:count]]


def import_with_weights(network: str | Workload, batch: int, size: int | None = None,
                        graph: str = "exported"
                        ) -> tuple[Any, list[Any], list[tuple[list[int], str]]]:
    """(the fused Relax IRModule, its weights as numpy arrays, its input signature).

    `network` is a zoo name or a resolved Workload (tasks/sources.py); a user's file brings
    its own batch and sizes. `main` takes the inputs first, then the weights in the order
    given: tuning needs only shapes, a deployable library (tasks/deploy.py) the weights too.

    Kept per process (the last few): a retune imports its network for the skip check, again
    to tune and again for `--out`, 1-3 s each; a user's file is keyed by its content hash.
    Callers must not modify what they get (TVM passes return new modules anyway).

    `graph` (GRAPHS) other than "exported" computes what depends on the weights alone here,
    once, on the weights themselves (_pretransform_weights): `main` then takes the weights
    already transformed (in the layout it reads), so no inference pays for it.
    """
    check_graph(graph, prepared=True)
    workload = network if isinstance(network, Workload) else Workload(network, ZOO, network)
    if not workload.is_zoo:  # a file's inputs fix its sizes: one cache entry, whatever asked
        batch, size = 1, None
    return _imported(workload, batch, size, graph, graph in FAST_MATH_GRAPHS and not _exact[0])


# set by exact_math(): prepared graphs keep the C library's exp, erf and tanh
_exact = [False]


@contextmanager
def exact_math() -> Iterator[None]:
    """Within it, the prepared graphs compute exp, erf and tanh as the exported graph does
    (a C library call an element), as they did before tasks/fast_math.py: for measuring what
    the fast approximations are worth (bench/graph_levers.py's GRAPH:exact), in this process."""
    _exact[0] = True
    try:
        yield
    finally:
        _exact[0] = False


@lru_cache(maxsize=4)
def _imported(workload: Workload, batch: int, size: int | None, graph: str = "exported",
              fast_math: bool = False) -> tuple[Any, list[Any], list[tuple[list[int], str]]]:
    tvm = load_tvm("llvm")
    from tvm import relax

    if workload.is_zoo:
        import torch
        from tvm.relax.frontend.torch import from_exported_program

        model, inputs = build_network(workload.name, batch, size)
        with torch.no_grad():
            exported = torch.export.export(model, inputs)
        mod = from_exported_program(exported, keep_params_as_input=True)
        mod, params = relax.frontend.detach_params(mod)
    else:
        from tasks.user_models import relax_with_weights

        mod, params = relax_with_weights(workload)
    blocked = [depthwise_as_grouped(BLOCKS[graph]), reduction_before_layer_norm_unblocked()
               ] if graph in BLOCKS else []
    converted = [  # ReLU6, depthwise convolutions and norms of reductions too (see there)
        clip_as_max_min(), *blocked,
        relax.transform.ConvertLayout({"relax.nn.conv2d": CONV_LAYOUTS[graph]}),
    ] if graph in CONV_LAYOUTS else []
    # a linear layer's weight packed in blocks of columns, its output computed in blocks
    packed = [pack_weight_matmuls(BLOCKS[graph])] if graph in PACKED_MATMULS else []
    # float16 operands and float16 sums. With float32 sums TVM 0.27 built 24 of 200 tensor-
    # core candidates on an H200: the cast back to float16 fuses into the matmul's function,
    # and its wmma store then writes float32 fragments into a float16 buffer
    # ("tvm_access_ptr element type must match"; docs/seed-dataset.md).
    mixed = [relax.transform.ToMixedPrecision(out_dtype="float16")
             ] if graph == MIXED_PRECISION else []
    # a prepared graph computes its weights once at load: a batch norm after a convolution
    # becomes part of them (tasks/batch_norm_fold.py) instead of four operations an output
    folded = [batch_norm_into_conv()] if graph != "exported" else []
    # exp, erf, tanh (softmax, GELU, sigmoid, SiLU) as polynomials LLVM vectorizes, not a C
    # library call an element (tasks/fast_math.py): the float32 graphs prepared for inference
    fast_rules = fast_math_legalizations() if fast_math else {}
    legalized = tvm.transform.Sequential([
        *folded,
        relax.transform.DecomposeOpsForInference(),
        *mixed,
        *converted,  # before LegalizeOps: it rewrites Relax operators, not TIR
        *packed,
        # without it extract_tasks finds nothing
        relax.transform.LegalizeOps({"relax.nn.conv2d": legalize_conv2d, **fast_rules}),
    ])(mod)
    check_lowered(legalized, workload.name)
    annotated = tvm.transform.Sequential([
        relax.transform.AnnotateTIROpPattern(),
        relax.transform.FoldConstant(),
    ])(legalized)
    weights = [w.numpy() for w in params.get("main", [])]
    if graph != "exported":
        annotated, weights = _pretransform_weights(tvm, annotated, weights)
    fused = tvm.transform.Sequential([
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
    ])(annotated)
    return fused, weights, input_signature(mod)


def _pretransform_weights(tvm: Any, mod: Any, weights: list[Any]) -> tuple[Any, list[Any]]:
    """Move what `main` computes from its weights alone (the layout transposes ConvertLayout
    put on them, and whatever else depends on weights only, such as batch norm's
    sqrt(var + eps)) out of `main` (LiftTransformParams), run it once on `weights`, and
    return `main` alone, which now takes the transformed weights, with those weights.

    Only shapes matter for tuning, but deploying (tasks/deploy.py) ships these weights, so
    they are computed here for everyone, with TVM's default schedules on the host CPU (the
    whole nhwc import of resnet18 took 7 s here, kept per process with the import). This
    builds in the calling process, as tasks/deploy.py's compile does."""
    from tvm import relax

    lifted = relax.transform.LiftTransformParams()(mod)
    transform = "main_transform_params"
    prepare = tvm.IRModule({gv: f for gv, f in lifted.functions.items()
                            if gv.name_hint != "main"})
    prepare = relax.transform.DeadCodeElimination([transform])(prepare)
    vm = relax.VirtualMachine(relax.build(prepare, target=tvm.target.Target("llvm")),
                              tvm.cpu())
    out = vm[transform]([tvm.runtime.tensor(w) for w in weights])
    transformed = [o.numpy() for o in out]
    main_only = tvm.IRModule({gv: f for gv, f in lifted.functions.items()
                              if gv.name_hint != transform}, attrs=lifted.attrs)
    return relax.transform.DeadCodeElimination(["main"])(main_only), transformed


# Relax operators the VM runs as they are; any other left after LegalizeOps has no lowering.
_VM_OPS = {"relax.null_value", "relax.shape_of", "relax.tensor_to_shape",
           "relax.shape_to_tensor", "relax.print", "relax.assert_op", "relax.make_closure",
           "relax.invoke_closure", "relax.hint_on_device", "relax.to_vdevice"}


def check_lowered(mod: Any, name: str) -> None:
    """Refuse, by operator name, a network whose import left Relax operators that TVM cannot
    lower (a frontend mapped them, LegalizeOps has no rule for their operand types): it would
    fail later, inside the first build, with a page of IR."""
    tvm = load_tvm("llvm")
    from tvm import relax

    left: set[str] = set()

    def visit(expr: Any) -> None:
        if isinstance(expr, relax.Call) and isinstance(expr.op, tvm.ir.Op):
            op = expr.op.name
            if not (op.startswith(("relax.call_", "relax.memory.", "relax.vm.",
                                   "relax.builtin.")) or op in _VM_OPS):
                types = ", ".join(str(getattr(getattr(a, "ty", None), "dtype", "?"))
                                  for a in expr.args)
                left.add(f"{op}({types})")

    for function in mod.functions.values():
        if isinstance(function, relax.Function):
            relax.analysis.post_order_visit(function.body, visit)
    if left:
        raise TenforgeError(f"TVM cannot lower operator {', '.join(sorted(left))} of {name} "
                            "(its import left it with no lowering rule for those types); "
                            "change that operation in the model, or export it another way")


def extract_network_tasks(network: str | Workload, batch: int, size: int | None, target: dict,
                          graph: str = "exported") -> list[TaskInfo]:
    """Import `network` and split it into MetaSchedule tuning tasks for `target`."""
    return split_into_tasks(import_to_relax(network, batch, size, graph), target)


def split_into_tasks(relax_mod: Any, target: dict) -> list[TaskInfo]:
    """A fused Relax module's MetaSchedule tuning tasks for `target`."""
    tvm = load_tvm(target)
    from tvm.s_tir import analysis
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import shash2hex
    from tvm.target import Target

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
