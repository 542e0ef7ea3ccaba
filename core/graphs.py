"""How a network's graph is prepared before it is split into tuning tasks (graph-level
levers; tasks/workloads.py applies them). Kept apart so that the CLI can list the choices
without importing PyTorch or TVM."""

from __future__ import annotations

from typing import Literal

from core.errors import TenforgeError

# How a network's graph is prepared before it is split into tasks (graph-level levers):
# - "exported": as torch.export gives it (weights are inputs of every inference, computations
#   on them included; the seed's tasks are these);
# - "folded": what depends on the weights alone (weight transposes, a batch norm after a
#   convolution folded into its weights and one bias, tasks/batch_norm_fold.py; any other
#   norm's sqrt(var + eps) and broadcasts) is computed once, at load, so no inference pays
#   for it, and the operators after a convolution fuse into it;
# - "nhwc": folded, with convolutions in NHWC (channels innermost, where x86 vectorizes);
# - "nchw8c" / "nchw16c": folded, with convolutions in NCHW[x]c, channels blocked by one
#   vector's width (8 floats in AVX2, 16 in AVX-512): the innermost axis of output and weight
#   is the vector, whatever the stride, and the layout flows through the batch norms, adds and
#   ReLUs between convolutions (NeoCPU's layout, TVM's x86 default before Relax), depthwise
#   convolutions and ReLU6 included, a layer norm's input reduced unblocked
#   (tasks/blocked_conv.py). A convolution whose channels the block does not divide (an RGB
#   stem) stays NCHW.
# - "packed8" / "packed16": nchw8c / nchw16c, and each matmul by a weight (a linear layer)
#   with the weight packed (N/b, K, b) at load and the output computed in blocks of b columns,
#   written back to (M, N) in the same function (tasks/blocked_matmul.py): a whole tile of
#   the weight contiguous, as a BLAS packs it. A matmul whose columns b does not divide, or
#   of two activations (attention), stays as it was.
# - "fp16": folded, in mixed precision (Relax's ToMixedPrecision): convolutions and matmuls
#   take float16 operands and sum in float16 (TVM 0.27 builds few tensor-core candidates of
#   float32 sums cast back, tasks/workloads.py), what lies between them runs in float16.
#   Those are the shapes GPU tensor cores execute: on sm_80 and later MetaSchedule's design
#   space (its cuda-tensorcore rules) tensorizes them with wmma. A GPU lever: x86 has no
#   float16 arithmetic TVM uses, so a CPU profile is refused it.
# Every float32 prepared graph (all but exported and fp16) computes exp, erf and tanh, and the
# softmax, GELU, sigmoid and SiLU made of them, with polynomial approximations LLVM vectorizes
# instead of a C library call per element (tasks/fast_math.py; 14-24x faster a function).
GRAPHS = ("exported", "folded", "nhwc", "nchw8c", "nchw16c", "packed8", "packed16", "fp16")
MIXED_PRECISION = "fp16"
FAST_MATH_GRAPHS = ("folded", "nhwc", "nchw8c", "nchw16c", "packed8", "packed16")
# - "blocked" is asked for, never stored: NCHW[x]c blocked by the profile's own vector,
#   resolve_graph makes it nchw16c on AVX-512 and nchw8c elsewhere before anything runs.
BLOCKED = "blocked"
CHOICES = (*GRAPHS, BLOCKED)  # what a user may ask for
# for flow parameters (the Prefect UI's choice)
Graph = Literal["exported", "folded", "nhwc", "nchw8c", "nchw16c", "packed8", "packed16",
                "fp16", "blocked"]
CONV_LAYOUTS = {  # relax.transform.ConvertLayout's (data, weight) for relax.nn.conv2d
    "nhwc": ["NHWC", "OHWI"],
    "nchw8c": ["NCHW8c", "OIHW8i8o"],
    "nchw16c": ["NCHW16c", "OIHW16i16o"],
}
BLOCKS = {"nchw8c": 8, "nchw16c": 16}  # the channel block of the blocked graphs
# the graphs whose weight matmuls are packed by their BLOCKS, each the blocked graph it extends
PACKED_MATMULS = {"packed8": "nchw8c", "packed16": "nchw16c"}
for _packed, _blocked in PACKED_MATMULS.items():  # convolutions as in the graph extended
    CONV_LAYOUTS[_packed] = CONV_LAYOUTS[_blocked]
    BLOCKS[_packed] = BLOCKS[_blocked]


def stored_network_name(name: str, graph: str) -> str:
    """The store's `networks` name of `name` prepared as `graph`: its tasks differ from the
    exported network's, so they are a network of their own ("resnet18+nhwc"), of the same
    family (models.dataset.network_family: held out together). '+' is in no network name."""
    return name if graph == "exported" else f"{name}+{graph}"


def check_graph(graph: str, prepared: bool = False) -> None:
    """`graph` is one a user may ask for (CHOICES); `prepared`: one that can be prepared as
    it is (GRAPHS: "blocked" must go through resolve_graph first)."""
    known = GRAPHS if prepared else CHOICES
    if graph not in known:
        raise TenforgeError(f"unknown graph preparation {graph!r}; choose one of "
                            f"{', '.join(known)}")


def default_graph(target_kind: str) -> str:
    """What `retune` prepares when no graph is asked for: blocked on a CPU, exported
    elsewhere (a GPU). At 1,000 trials of MetaSchedule's XGB, one thread
    (docs/tuning-results.md): resnet18 ran 57.1 ms blocked against 73.4 exported on a Zen 3
    (median of 3 seeds); on an AVX-512 Xeon (1 seed each) resnet18 29.0 in nchw16c against
    39.1 exported and mobilenet_v2 11.4 against 15.4; BERT has
    no convolution, so blocked is folded for it, 1.82x faster than exported at 150 trials."""
    return BLOCKED if target_kind == "llvm" else "exported"


def resolve_graph(graph: str, target_kind: str, vector_bytes: float) -> str:
    """The graph to prepare when `graph` is asked for on a profile of `target_kind` whose
    vectors are `vector_bytes` wide: "blocked" becomes one vector of floats a channel block,
    nchw16c on AVX-512 and nchw8c on AVX2 (two vectors on SSE4.2: no narrower one is here).
    On an AVX-512 Xeon (2026-11-24), resnet18 tuned at 1,000 trials ran 29.0-29.8 ms in
    nchw16c and 33.6-36.8 in nchw8c, PyTorch 32.9 (docs/tuning-results.md). Others pass
    through."""
    check_graph(graph)
    if graph == MIXED_PRECISION and target_kind == "llvm":
        raise TenforgeError(f"--graph {MIXED_PRECISION} runs convolutions and matmuls on GPU "
                            "tensor cores; this profile is a CPU (llvm): pick blocked, nhwc, "
                            "folded or exported")
    if graph != BLOCKED:
        return graph
    if target_kind != "llvm":
        raise TenforgeError(f"--graph {BLOCKED} blocks channels by a CPU's vector width; this "
                            f"profile is a {target_kind} target: pick exported or folded")
    return "nchw16c" if vector_bytes >= 64 else "nchw8c"
