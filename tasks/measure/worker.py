"""The worker side: runs in child processes (`python -m tasks.measure.worker TARGET R W`),
serving build / prepare / run requests over a pipe until the pipe closes.

Each worker keeps the tasks' modules and prepared inputs and reference outputs in bounded
caches, so a task is prepared once per worker rather than once per batch.
"""

from __future__ import annotations

import json
import os
import sys

if __name__ == "__main__":
    # Workers never use torch, but tvm_ffi imports it eagerly whenever it can: blocked, a
    # worker's `import tvm` costs 1.2 s of CPU instead of 3.7 (three workers per Measurer).
    sys.modules.setdefault("torch", None)  # type: ignore[arg-type]
import time
import traceback
from collections import OrderedDict
from typing import Any, Callable

import numpy as np

from tasks.measure.linking import export_candidate
from tasks.measure.network import compile_network
from tasks.measure.protocol import Duplex, Unprepared, one_line
from tasks.measure.reference import parallel_outer_loops, reference_target

_TASK_MODS: OrderedDict[str, Any] = OrderedDict()
_TASK_STATE: OrderedDict[str, dict[str, Any]] = OrderedDict()
_SESSION: dict[str, Any] = {}
_MODS_KEPT = 64
# Inputs and reference outputs are kept per task so that a task is prepared (its unscheduled
# function built and run) once per worker, not once per batch; bounded by their size.
_STATE_BYTES_KEPT = 512 * 2**20


def _lru_put(cache: OrderedDict, key: str, value: Any, size: Callable[[Any], int],
             budget: int) -> Any:
    cache[key] = value
    cache.move_to_end(key)
    while len(cache) > 1 and sum(size(v) for v in cache.values()) > budget:
        cache.popitem(last=False)
    return value


def _state_bytes(state: dict[str, Any]) -> int:
    return sum(a.nbytes for a in state["inputs"]) + sum(a.nbytes for a in state["reference"] or ())


def _task_mod(tvm: Any, workload_hash: str, mod_json: str) -> Any:
    if workload_hash in _TASK_MODS:
        return _TASK_MODS[workload_hash]
    return _lru_put(_TASK_MODS, workload_hash, tvm.ir.load_json(mod_json), lambda _: 1,
                    _MODS_KEPT)


def _session(tvm: Any, target: dict, runner: dict) -> tuple[Callable[[str], Any], Any]:
    """(load_module(path), device): local, or on a remote device through TVM RPC."""
    if "dev" in _SESSION:
        return _SESSION["load"], _SESSION["dev"]
    kind = {"llvm": "cpu"}.get(target["kind"], target["kind"])
    if runner.get("kind") == "rpc":
        from tvm import rpc

        if runner.get("tracker"):
            host, port = runner["tracker"].rsplit(":", 1)
            remote = rpc.connect_tracker(host, int(port)).request(
                runner["key"], session_timeout=int(runner.get("session_timeout", 0)))
        else:
            host, port = runner["address"].rsplit(":", 1)
            remote = rpc.connect(host, int(port))

        def load(path: str) -> Any:
            remote.upload(path)
            return remote.load_module(os.path.basename(path))

        _SESSION.update(load=load, dev=remote.device(kind, 0), remote=remote)
    else:
        _SESSION.update(load=tvm.runtime.load_module, dev=tvm.device(kind, 0))
    return _SESSION["load"], _SESSION["dev"]


def _do_build(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    from tvm import s_tir
    from tvm.target import Target

    start = time.perf_counter()
    sch = s_tir.Schedule(_task_mod(tvm, req["workload_hash"], req["mod_json"]))
    s_tir.schedule.Trace.apply_json_to_schedule(json.loads(req["trace_json"]), sch)
    executable = tvm.compile(sch.mod, target=Target(req["target"]))
    if not req.get("asm_only"):  # asm_only: the columns are all it is built for (no linking)
        export_candidate(executable, req["artifact"])
    out = {"build_s": time.perf_counter() - start}
    if req.get("asm"):  # what LLVM made of it, read now: a later read costs a second build
        from models.asm_features import asm_vector, compute_text

        try:
            out["asm"] = asm_vector(compute_text(executable.mod.inspect_source("asm"))).tolist()
        except Exception:  # noqa: BLE001 - the columns are extra: never fail the measurement
            out["asm"] = None
    return out


def _random_args(arg_info: list[Any], seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    args = []
    for info in arg_info:
        shape, dtype = [int(d) for d in info.shape], str(info.dtype)
        if dtype.startswith(("float", "bfloat")):
            args.append(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        else:  # integer inputs are often indices: zeros are always in range
            args.append(np.zeros(shape, dtype=dtype))
    return args


def _do_prepare(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    """Inputs for a task and, if asked, the unscheduled function's outputs on them (its outer
    loops run in parallel: tasks/measure/reference.py)."""
    cached = _TASK_STATE.get(req["workload_hash"])
    if cached is not None and (cached["reference"] is not None or not req["check"]):
        return {"checked": cached["reference"] is not None}
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    mod = _task_mod(tvm, req["workload_hash"], req["mod_json"])
    inputs = _random_args(ms.arg_info.ArgInfo.from_prim_func(mod["main"]), seed=0)
    reference = None
    if req["check"]:
        on_host = reference_target(req["target"])
        load, dev = (tvm.runtime.load_module, tvm.cpu(0)) if on_host else \
            _session(tvm, req["target"], req["runner"])
        path = os.path.join(req["artifact_dir"], f"ref-{req['workload_hash']}.so")
        export_candidate(tvm.compile(parallel_outer_loops(mod),
                                     target=Target(on_host or req["target"])), path)
        tensors = [tvm.runtime.tensor(a, dev) for a in inputs]
        load(path)["main"](*tensors)
        reference = [t.numpy() for t in tensors]
        os.remove(path)
    _lru_put(_TASK_STATE, req["workload_hash"], {"inputs": inputs, "reference": reference},
             _state_bytes, _STATE_BYTES_KEPT)
    return {"checked": reference is not None}


# (rtol, atol as a share of the largest output) for functions that compute in 32/64-bit floats,
# and for those with a 16-bit float among their buffers: a float16 sum (the fp16 graph's
# matmuls) rounds at every step, and the host's sequential reference and a tensor core's
# blocked order differ by up to ~1.7% of the largest output over 3,072-4,608 terms of
# uniform(-1, 1) inputs (simulated, numpy), so such a function is checked to 2% of it: a
# schedule that drops or repeats part of a sum is still caught where that part is more than a
# few dozen terms. The function's buffers decide, not each output's type: a float16 matmul whose
# result is cast to float32 for a residual add (half of resnet18's fp16 tasks) has float32
# outputs with float16 rounding in them, and an H200 failed every tensor-core candidate of
# those tasks at the 32-bit tolerance while passing every one of the same convolution's
# float16-output tasks.
_TOLERANCE = {False: (1e-3, 1e-4), True: (1e-2, 2e-2)}


def computes_in_16_bits(buffers: list[np.ndarray]) -> bool:
    """Whether any floating-point buffer of a function (input or output) is 16 bits wide."""
    return any(b.dtype.kind == "f" and b.dtype.itemsize <= 2 for b in buffers)


def output_mismatch(got: list[np.ndarray], want: list[np.ndarray],
                    in_16_bits: bool | None = None) -> str | None:
    """None where every output matches its reference within rounding (_TOLERANCE), else what
    differs first, for the measurement's error message. `in_16_bits` defaults to what the
    buffers themselves say."""
    if in_16_bits is None:
        in_16_bits = computes_in_16_bits(list(want))
    rtol, atol = _TOLERANCE[in_16_bits]
    for index, (g, w) in enumerate(zip(got, want)):
        if g.dtype.kind == "f":
            finite = np.abs(w[np.isfinite(w)])  # a float16 overflow is inf; inf == inf is close
            scale = max(1.0, float(finite.max())) if finite.size else 1.0
            if not np.allclose(g, w, rtol=rtol, atol=atol * scale, equal_nan=True):
                both = np.isfinite(g) & np.isfinite(w)
                error = float(np.abs(g[both].astype(np.float64) - w[both]).max()) \
                    if both.any() else float("inf")
                return (f"output {index} ({g.dtype}) is off by up to {error:.3g} "
                        f"({100 * error / scale:.2g}% of its largest value {scale:.3g}; "
                        f"allowed: rtol {rtol:g} + {100 * atol:g}% of it)")
        elif not np.array_equal(g, w):
            return f"output {index} ({g.dtype}) differs in {int((g != w).sum())} elements"
    return None


def _timed_runs(tvm: Any, function: Any, name: str, dev: Any, tensors: list[Any],
                settings: dict[str, Any], repeat: int, target_kind: str) -> dict[str, Any]:
    """Warm-up runs, then `repeat` timed repeats of `function[name]` (cache flushed on CPUs)."""
    for _ in range(settings["warmup_runs"]):
        function[name](*tensors)
    flush = settings["cache_flush"] and target_kind == "llvm"
    evaluator = function.time_evaluator(name, dev, number=settings["number"], repeat=repeat,
                                        min_repeat_ms=settings["min_repeat_ms"],
                                        f_preproc="cache_flush_cpu_non_first_arg" if flush else "")
    start = time.perf_counter()
    run_secs = [float(x) for x in evaluator(*tensors).results]
    return {"run_secs": run_secs, "run_wall_s": time.perf_counter() - start}


def _do_run(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    if req["workload_hash"] not in _TASK_STATE:
        raise Unprepared()
    state = _TASK_STATE[req["workload_hash"]]
    load, dev = _session(tvm, req["target"], req["runner"])
    lib = load(req["artifact"])
    tensors = [tvm.runtime.tensor(a, dev) for a in state["inputs"]]
    out = _timed_runs(tvm, lib, "main", dev, tensors, req["settings"], req["repeat"],
                      req["target"]["kind"])
    verified, mismatch = None, None
    if state["reference"] is not None:
        mismatch = output_mismatch([t.numpy() for t in tensors], state["reference"],
                                   computes_in_16_bits(state["inputs"]))
        verified = mismatch is None
    return {**out, "verified": verified, "mismatch": mismatch}


# MetaSchedule's own builder/runner protocol (tasks/ms_backend.py): a scheduled module in, an
# artifact out; an artifact and argument shapes in, run times out. No reference check, as in
# MetaSchedule's LocalRunner.

def _do_build_module(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    from tvm.target import Target

    start = time.perf_counter()
    export_candidate(tvm.compile(tvm.ir.load_json(req["mod_json"]), target=Target(req["target"])),
                     req["artifact"])
    return {"build_s": time.perf_counter() - start}


class _Shape:  # what _random_args reads from an ArgInfo
    def __init__(self, shape: list[int], dtype: str):
        self.shape, self.dtype = shape, dtype


def _do_run_module(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    load, dev = _session(tvm, req["target"], req["runner"])
    lib = load(req["artifact"])
    args = _random_args([_Shape(a["shape"], a["dtype"]) for a in req["args"]], seed=0)
    tensors = [tvm.runtime.tensor(a, dev) for a in args]
    return _timed_runs(tvm, lib, "main", dev, tensors, req["settings"], req["repeat"],
                       req["target"]["kind"])


E2E_BUDGET_S = 120.0  # what the timed runs of one end-to-end measurement may take


def e2e_plan(first_run_s: float, repeat: int, warmup_runs: int,
             budget_s: float = E2E_BUDGET_S) -> tuple[int, int]:
    """(warm-up runs, timed repeats) after a first run of `first_run_s`: as asked where they
    fit in `budget_s`, else as many repeats as fit (at least one) and no more warm-ups (the
    first run was one)."""
    if first_run_s * (repeat + warmup_runs - 1) <= budget_s:
        return max(0, warmup_runs - 1), repeat
    return 0, max(1, min(repeat, int(budget_s // max(first_run_s, 1e-9))))


def _do_run_network(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    """Compile a Relax network with a tuning database (none: untuned) and time it end to end.

    Parameters are inputs of `main` (weights detached at import), so every input, weights
    included, gets seeded random values: only shapes matter for latency.
    """
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    if req["runner"].get("kind", "local") != "local":
        raise RuntimeError("end-to-end runs on RPC devices are not supported yet; run locally")
    target = Target(req["target"])
    mod = tvm.ir.load_json(req["relax_json"])
    if req.get("database"):
        database = ms.database.JSONDatabase(work_dir=req["database"], allow_missing=False)
    else:
        database = ms.database.MemoryDatabase()
    start = time.perf_counter()
    executable, applied = compile_network(tvm, mod, database, target)
    tuned = sorted(gv.name_hint for gv, f in applied.functions.items()
                   if not isinstance(f, relax.Function) and f.attrs is not None
                   and bool(f.attrs.get("tirx.is_scheduled", False)))
    compile_s = time.perf_counter() - start
    _, dev = _session(tvm, req["target"], req["runner"])
    vm = relax.VirtualMachine(executable, dev)
    inputs = _random_args([_Shape([int(d) for d in p.ty.shape], str(p.ty.dtype))
                           for p in mod["main"].params], seed=0)
    tensors = [tvm.runtime.tensor(a, dev) for a in inputs]
    # Whole-network runs keep caches warm between repeats: that is how a deployed model runs.
    # A first run, timed, says how many more fit (an untuned BERT-base takes tens of seconds
    # a run at one thread: 3 warm-ups and 20 repeats ran past the 600 s call timeout).
    started = time.perf_counter()
    vm["main"](*tensors)
    warmups, repeat = e2e_plan(time.perf_counter() - started, req["repeat"],
                               req["settings"]["warmup_runs"])
    settings = {**req["settings"], "cache_flush": False, "warmup_runs": warmups}
    out = _timed_runs(tvm, vm, "main", dev, tensors, settings, repeat,
                      req["target"]["kind"])
    functions = sum(not isinstance(f, relax.Function) for f in applied.functions.values())
    return {**out, "compile_s": compile_s, "tuned_functions": tuned,
            "tir_functions": functions}


def _do_run_library(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    """Load an exported library and its weights as a deployment does (tasks/deploy.py) and
    time `main` end to end on seeded random inputs, caches warm."""
    from tvm.runtime.vm import VirtualMachine  # the runtime's VM: what a deployment has

    if req["runner"].get("kind", "local") != "local":
        raise RuntimeError("library runs on RPC devices are not supported yet; run locally")
    _, dev = _session(tvm, req["target"], req["runner"])
    vm = VirtualMachine(tvm.runtime.load_module(req["library"]), dev)
    weights = tvm.runtime.load_param_dict_from_file(req["params"])
    inputs = _random_args([_Shape(a["shape"], a["dtype"]) for a in req["inputs"]], seed=0)
    tensors = ([tvm.runtime.tensor(a, dev) for a in inputs]
               + [weights[name].copyto(dev) for name in req["weight_names"]])
    first = vm["main"](*tensors)
    outputs = [{"shape": [int(d) for d in o.shape], "dtype": str(o.dtype)}
               for o in ([first] if hasattr(first, "shape") else first)]  # one, or a tuple
    settings = {**req["settings"], "cache_flush": False}
    return {**_timed_runs(tvm, vm, "main", dev, tensors, settings, req["repeat"],
                          req["target"]["kind"]), "outputs": outputs}


_HANDLERS = {"build": _do_build, "prepare": _do_prepare, "run": _do_run,
             "build_module": _do_build_module, "run_module": _do_run_module,
             "run_network": _do_run_network, "run_library": _do_run_library}


def _worker_main(conn: Any, target: dict[str, Any]) -> None:
    from core.tvm_env import load_tvm

    tvm = load_tvm(target)
    conn.send(("ready", None))
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", _HANDLERS[req["op"]](tvm, req)))
        except Unprepared:
            conn.send(("unprepared", None))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a stored error row
            conn.send(("error", one_line(f"{type(exc).__name__}: {exc}")
                       if str(exc) else one_line(traceback.format_exc())))


if __name__ == "__main__":  # python -m tasks.measure.worker TARGET_JSON READ_FD WRITE_FD
    _worker_main(Duplex(int(sys.argv[2]), int(sys.argv[3])), json.loads(sys.argv[1]))
