"""Importing TVM the cheap way, and small TVM helpers shared by sampling, building and running.

`import tvm.s_tir.tensor_intrin` costs ~34 s on the project's 2-core machines, 24 s of it the
CUDA intrinsics (FACTS.md); MetaSchedule's TuneContext imports it on construction. An x86 CPU
target needs only the x86 intrinsics (0.4 s), so `load_tvm(target)` registers the package
without running its __init__ and imports just the submodules that target can use. The CUDA
intrinsics then take ~2 s instead of 10-12 s (a Zen 4 vCPU): see _pseudo_files_resolved_once.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from typing import Any

_INTRIN_PACKAGE = "tvm.s_tir.tensor_intrin"
# Which tensor-intrinsic modules a target can use (arm_cpu + dot_product_common cost ~2.9 s, so
# x86 targets skip them).
_INTRINSICS_FOR = {
    "x86": ("x86",),
    "arm": ("arm_cpu", "dot_product_common"),
    "cuda": ("cuda",),
    "rocm": ("rocm",),
    "metal": ("metal",),
}


# Target kinds that run kernels on an accelerator (thread-bound kernels; the host CPU launches).
GPU_TARGET_KINDS = ("cuda", "rocm", "metal", "vulkan", "opencl")


def intrinsic_family(target: dict[str, Any] | str) -> str:
    """'x86', 'arm', 'cuda', ... for a target dict (or a target kind)."""
    if isinstance(target, str):
        return "x86" if target == "llvm" else target
    if target["kind"] != "llvm":
        return str(target["kind"])
    triple = str(target.get("mtriple", ""))
    return "arm" if triple.startswith(("aarch64", "arm")) else "x86"


def load_tvm(target: dict[str, Any] | str = "llvm") -> Any:
    """Import tvm with only the tensor intrinsics `target` can use; return the module.

    `target` is a target dict (preferred: it tells x86 from ARM) or a target kind.
    """
    import tvm  # noqa: F401  (the ~3 s part)

    if _INTRIN_PACKAGE not in sys.modules:
        spec = importlib.util.find_spec(_INTRIN_PACKAGE)
        package = importlib.util.module_from_spec(spec)  # __path__ set, __init__ not run
        sys.modules[_INTRIN_PACKAGE] = package
        setattr(importlib.import_module("tvm.s_tir"), "tensor_intrin", package)
    for name in _INTRINSICS_FOR.get(intrinsic_family(target), ()):
        if f"{_INTRIN_PACKAGE}.{name}" not in sys.modules:
            with _pseudo_files_resolved_once():
                importlib.import_module(f"{_INTRIN_PACKAGE}.{name}")
    return tvm


@contextlib.contextmanager
def _pseudo_files_resolved_once() -> Iterator[None]:
    """Within the block, `inspect.getmodule` answers a frame of a pseudo-file once per name.

    Every `@T.prim_func` an intrinsics module defines calls `inspect.stack()` (TVM keeps the
    caller's frames to resolve closure variables). For a frame of `<frozen importlib...>`,
    `<string>` or `<ast>`, no module has that file, so getmodule scans all of sys.modules (~2,000
    with torch) every time: 85% of the CUDA intrinsics' 10-12 s import (cProfile, 15,840 calls,
    8,100 of them such scans). Such a frame's module is None and stays None, so the answer is
    kept per name; real files go to inspect's own cache as before.
    """
    original = inspect.getmodule
    unresolved: set[str] = set()

    def getmodule(obj: Any, _filename: str | None = None) -> Any:
        name = _filename if _filename is not None else getattr(
            getattr(obj, "f_code", None), "co_filename", None)
        if name in unresolved:
            return None
        module = original(obj, _filename)
        if module is None and isinstance(name, str) and name.startswith("<"):
            unresolved.add(name)
        return module

    inspect.getmodule = getmodule
    try:
        yield
    finally:
        inspect.getmodule = original


def tvm_version() -> str:
    import tvm

    return str(tvm.__version__)


def to_plain_json(obj: Any) -> Any:
    """Turn TVM containers/immediates (as Trace.as_json returns them) into plain JSON values."""
    from tvm.tirx import FloatImm, IntImm

    if obj is None or isinstance(obj, (bool, int, float)):
        return obj
    if isinstance(obj, str):
        return str(obj)  # tvm String -> str
    if isinstance(obj, (IntImm, FloatImm)):
        return obj.value
    if hasattr(obj, "items"):
        return {str(k): to_plain_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)) or hasattr(obj, "__len__"):
        return [to_plain_json(x) for x in obj]
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")


def trace_json(trace: Any, remove_postproc: bool = False) -> str:
    """A schedule trace as the JSON text `json.dumps(to_plain_json(trace.as_json()))` gives,
    byte for byte, in about 3/4 of its time: TVM serializes the trace to its JSON graph in
    C++ and one pass over plain lists rebuilds the values, where as_json crossed the FFI for
    every element twice (its own conversion, then to_plain_json). Sampling spent 14% of its
    time there (256 candidates of a mobilenet_v2 convolution, docs/tuning-results.md). A node
    kind the graph pass does not know (an IndexMap, which as_json saves as TVM JSON) takes the
    old path."""
    import json

    import tvm_ffi

    as_json = tvm_ffi.get_global_func("s_tir.schedule.TraceAsJSON")
    to_graph = tvm_ffi.get_global_func("ffi.ToJSONGraphString")
    raw = as_json(trace, remove_postproc)
    graph = json.loads(to_graph(raw, None))
    nodes = graph["nodes"]

    def plain(index: int) -> Any:
        node = nodes[index]
        kind, data = node["type"], node.get("data")
        if kind == "ffi.Array":
            return [plain(i) for i in data]
        if kind in ("ffi.String", "int", "float", "bool"):
            return data
        if kind == "None":
            return None
        if kind == "ir.IntImm":  # its value is the index of an "int" node
            value = nodes[data["value"]]
            if value["type"] != "int":
                raise _UnknownNode(f"IntImm of {value['type']}")
            return value["data"]
        if kind == "ir.FloatImm":  # its value is inline
            return data["value"]
        raise _UnknownNode(kind)

    try:
        return json.dumps(plain(graph["root_index"]))
    except _UnknownNode:
        return json.dumps(to_plain_json(trace.as_json(remove_postproc=remove_postproc)))


class _UnknownNode(Exception):
    """A JSON-graph node kind trace_json's fast pass does not convert."""


def structural_hash_hex(mod: Any) -> str:
    """The structural hash MetaSchedule uses for workloads, as 16 hex digits."""
    import tvm_ffi

    return f"{tvm_ffi.structural_hash(mod) & (2**64 - 1):016x}"
