"""Build and run candidates in long-lived worker processes, surviving crashes and hangs.

Why not MetaSchedule's LocalBuilder/LocalRunner: they start a fresh process pool for every
batch and each new worker pays the ~34 s tensor-intrinsics import (FACTS.md), so every batch
costs a fixed ~37 s. Here each worker starts once, imports only what its target needs
(tasks.tvm_env.load_tvm), and serves requests over a pipe until it dies. A request that
crashes its worker (segfault) or outlives its timeout kills only that worker: the candidate is
recorded as build_crash / run_crash / *_timeout and a fresh worker takes the next request.

Protocol per batch: builds run in parallel on `build_workers` processes; then runs go one at
a time on a single runner process while nothing else runs, so timings are not disturbed by
compiles. Before a task's first run the runner prepares its inputs (seeded random values) and
reference outputs (the unscheduled function, built and run once); every run's outputs are
compared with them (`wrong_result` when they differ).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import OrderedDict
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable, Sequence

import numpy as np

from tasks.hardware import PROJECT_ROOT, HardwareProfile, MeasureSettings


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


def _one_line(text: str, limit: int = 500) -> str:
    lines = [ln.strip() for ln in str(text).strip().splitlines() if ln.strip()]
    # TVM errors end with the useful line; Python tracebacks too.
    return (lines[-1] if lines else "unknown error")[:limit]


# ============================================================================ worker side
# Everything below up to the parent side runs in the child processes.

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
    lib = tvm.compile(sch.mod, target=Target(req["target"]))
    lib.export_library(req["artifact"])
    return {"build_s": time.perf_counter() - start}


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
    """Inputs for a task and, if asked, the unscheduled function's outputs on them."""
    cached = _TASK_STATE.get(req["workload_hash"])
    if cached is not None and (cached["reference"] is not None or not req["check"]):
        return {"checked": cached["reference"] is not None}
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    mod = _task_mod(tvm, req["workload_hash"], req["mod_json"])
    inputs = _random_args(ms.arg_info.ArgInfo.from_prim_func(mod["main"]), seed=0)
    reference = None
    if req["check"]:
        load, dev = _session(tvm, req["target"], req["runner"])
        path = os.path.join(req["artifact_dir"], f"ref-{req['workload_hash']}.so")
        tvm.compile(mod, target=Target(req["target"])).export_library(path)
        tensors = [tvm.runtime.tensor(a, dev) for a in inputs]
        load(path)["main"](*tensors)
        reference = [t.numpy() for t in tensors]
        os.remove(path)
    _lru_put(_TASK_STATE, req["workload_hash"], {"inputs": inputs, "reference": reference},
             _state_bytes, _STATE_BYTES_KEPT)
    return {"checked": reference is not None}


def _outputs_match(got: list[np.ndarray], want: list[np.ndarray]) -> bool:
    for g, w in zip(got, want):
        if g.dtype.kind == "f":
            scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
            if not np.allclose(g, w, rtol=1e-3, atol=1e-4 * scale, equal_nan=True):
                return False
        elif not np.array_equal(g, w):
            return False
    return True


class _Unprepared(Exception):
    """The runner holds no inputs/reference for this task (new worker, or evicted)."""


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
        raise _Unprepared()
    state = _TASK_STATE[req["workload_hash"]]
    load, dev = _session(tvm, req["target"], req["runner"])
    lib = load(req["artifact"])
    tensors = [tvm.runtime.tensor(a, dev) for a in state["inputs"]]
    out = _timed_runs(tvm, lib, "main", dev, tensors, req["settings"], req["repeat"],
                      req["target"]["kind"])
    verified = None
    if state["reference"] is not None:
        verified = _outputs_match([t.numpy() for t in tensors], state["reference"])
    return {**out, "verified": verified}


# MetaSchedule's own builder/runner protocol (tasks/ms_backend.py): a scheduled module in, an
# artifact out; an artifact and argument shapes in, run times out. No reference check, as in
# MetaSchedule's LocalRunner.

def _do_build_module(tvm: Any, req: dict[str, Any]) -> dict[str, Any]:
    from tvm.target import Target

    start = time.perf_counter()
    tvm.compile(tvm.ir.load_json(req["mod_json"]), target=Target(req["target"])
                ).export_library(req["artifact"])
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

    gpu = target.kind.name in ("cuda", "rocm", "metal", "vulkan", "opencl")
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
    settings = {**req["settings"], "cache_flush": False}
    out = _timed_runs(tvm, vm, "main", dev, tensors, settings, req["repeat"],
                      req["target"]["kind"])
    functions = sum(not isinstance(f, relax.Function) for f in applied.functions.values())
    return {**out, "compile_s": compile_s, "tuned_functions": tuned,
            "tir_functions": functions}


_HANDLERS = {"build": _do_build, "prepare": _do_prepare, "run": _do_run,
             "build_module": _do_build_module, "run_module": _do_run_module,
             "run_network": _do_run_network}


def _worker_main(conn: Any, target: dict[str, Any]) -> None:
    from tasks.tvm_env import load_tvm

    tvm = load_tvm(target)
    conn.send(("ready", None))
    while True:
        try:
            req = conn.recv()
        except EOFError:
            return
        try:
            conn.send(("ok", _HANDLERS[req["op"]](tvm, req)))
        except _Unprepared:
            conn.send(("unprepared", None))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a stored error row
            conn.send(("error", _one_line(f"{type(exc).__name__}: {exc}")
                       if str(exc) else _one_line(traceback.format_exc())))


# ============================================================================ parent side


class _Duplex:
    """A send/recv/poll connection over two pipe fds (multiprocessing's pickling framing)."""

    def __init__(self, read_fd: int, write_fd: int):
        self._read = Connection(read_fd, writable=False)
        self._write = Connection(write_fd, readable=False)

    def send(self, obj: Any) -> None:
        self._write.send(obj)

    def recv(self) -> Any:
        return self._read.recv()

    def poll(self, timeout: float) -> bool:
        return self._read.poll(timeout)

    def close(self) -> None:
        self._read.close()
        self._write.close()


class WorkerFailure(Exception):
    """The worker died (kind 'crash') or did not answer in time (kind 'timeout')."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Worker:
    """A child process that serves build/prepare/run requests; restarted after a failure."""

    START_TIMEOUT_S = 120.0

    def __init__(self, target: dict[str, Any], env: dict[str, str]):
        self.target = target
        self.env = env
        self.process: Any = None
        self.conn: Any = None

    def _start(self) -> None:
        # A plain `python -m tasks.measure` child (not multiprocessing's spawn, which re-imports
        # the caller's __main__ and breaks unguarded scripts) talking over two inherited pipes.
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = {**os.environ, **self.env,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                           os.environ.get("PYTHONPATH")]))}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tasks.measure", json.dumps(self.target), str(to_child_r),
             str(from_child_w)], pass_fds=(to_child_r, from_child_w), env=env,
            stdin=subprocess.DEVNULL, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self.conn = _Duplex(from_child_r, to_child_w)
        if not self.conn.poll(self.START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("measurement worker did not start within "
                               f"{self.START_TIMEOUT_S:.0f} s")
        try:
            self.conn.recv()
        except EOFError:
            code = self.process.wait(5)
            self.stop()
            raise RuntimeError(f"measurement worker failed to start (exit code {code})") from None

    def ensure_started(self) -> None:
        """Start the process if it is not running (errors surface on the next call)."""
        try:
            if self.process is None or self.process.poll() is not None:
                self._start()
        except RuntimeError:
            pass

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The handler's result; raises WorkerFailure or RuntimeError (handler error text)."""
        if self.process is None or self.process.poll() is not None:
            self._start()
        try:
            self.conn.send(request)
            if not self.conn.poll(timeout_s):
                self.stop()
                raise WorkerFailure("timeout", f"no result within {timeout_s:.0f} s; worker killed")
            status, payload = self.conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            try:
                code = self.process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            reason = (f"killed by signal {signal.Signals(-code).name}" if code and code < 0
                      else f"exit code {code}")
            raise WorkerFailure("crash", f"worker process died ({reason})") from None
        if status == "error":
            raise RuntimeError(payload)
        if status == "unprepared":
            raise _Unprepared()
        return payload

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None


class Measurer:
    """Measures batches of candidates on one hardware profile. Close it (or use `with`)."""

    def __init__(self, profile: HardwareProfile, settings: MeasureSettings | None = None,
                 build_workers: int = 2):
        self.profile = profile
        self.settings = settings or profile.measure
        target = profile.target
        threads = str(profile.num_threads)
        self.builders = [Worker(target, {"TVM_NUM_THREADS": "1"}) for _ in range(build_workers)]
        self.runner = Worker(target, {"TVM_NUM_THREADS": threads, "OMP_NUM_THREADS": threads})
        self.artifact_dir = tempfile.mkdtemp(prefix="tenforge-artifacts-")
        # Tasks whose reference output could not be made: never pay that failure again.
        self._no_reference: set[str] = set()
        self._artifacts = 0  # artifact file names of build_modules
        # Start every worker now and together: their TVM imports overlap instead of queuing
        # behind the first build and the first run.
        starters = [threading.Thread(target=w.ensure_started)
                    for w in [*self.builders, self.runner]]
        for thread in starters:
            thread.start()
        for thread in starters:
            thread.join()

    def __enter__(self) -> "Measurer":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        for worker in [*self.builders, self.runner]:
            worker.stop()
        shutil.rmtree(self.artifact_dir, ignore_errors=True)

    # -------------------------------------------------------------- phases

    def _build_parallel(self, requests: dict[Any, dict[str, Any]]) -> dict[Any, dict[str, Any]]:
        """Send build requests to the build workers in parallel; key -> outcome (the worker's
        answer plus `artifact`, or `error_kind`, `error_msg` and `build_s`)."""
        todo: queue.Queue[tuple[Any, dict[str, Any]]] = queue.Queue()
        for item in requests.items():
            todo.put(item)
        outcomes: dict[Any, dict[str, Any]] = {}

        def drain(worker: Worker) -> None:
            while True:
                try:
                    key, request = todo.get_nowait()
                except queue.Empty:
                    return
                start = time.perf_counter()
                try:
                    result = worker.call(request, self.settings.build_timeout_s)
                    outcomes[key] = {"artifact": request["artifact"], **result}
                except WorkerFailure as failure:
                    outcomes[key] = {"error_kind": f"build_{failure.kind}",
                                     "error_msg": str(failure),
                                     "build_s": time.perf_counter() - start}
                except RuntimeError as error:
                    outcomes[key] = {"error_kind": "build_error", "error_msg": str(error),
                                     "build_s": time.perf_counter() - start}

        threads = [threading.Thread(target=drain, args=(w,))
                   for w in self.builders[:len(requests)]]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return outcomes

    def _build_all(self, jobs: Sequence[MeasureJob]) -> dict[int, dict[str, Any]]:
        """Build every job on the build workers in parallel; candidate_id -> outcome."""
        return self._build_parallel({job.candidate_id: {
            "op": "build", "workload_hash": job.workload_hash, "mod_json": job.mod_json,
            "trace_json": job.trace_json, "target": self.profile.target,
            "artifact": os.path.join(self.artifact_dir, f"cand-{job.candidate_id}.so")}
            for job in jobs})

    # -------------------------------------------------- MetaSchedule's protocol (ms_backend)

    def build_modules(self, mod_jsons: Sequence[str]) -> list[dict[str, Any]]:
        """Compile scheduled IRModules (tvm.ir.save_json) in parallel, in order."""
        requests = {}
        for i, mod_json in enumerate(mod_jsons):
            self._artifacts += 1
            # One folder per artifact: MetaSchedule's RemoveBuildArtifact deletes the folder.
            folder = os.path.join(self.artifact_dir, f"mod-{self._artifacts}")
            os.makedirs(folder)
            requests[i] = {"op": "build_module", "mod_json": mod_json,
                           "target": self.profile.target,
                           "artifact": os.path.join(folder, "lib.so")}
        outcomes = self._build_parallel(requests)
        return [outcomes[i] for i in range(len(mod_jsons))]

    def run_module(self, artifact: str, args: Sequence[dict[str, Any]],
                   flops: float = 0.0) -> dict[str, Any]:
        """Time one built module on random inputs: {run_secs, run_wall_s} or {error_kind,
        error_msg}. The artifact is deleted afterwards."""
        request = {"op": "run_module", "artifact": artifact, "args": list(args),
                   "target": self.profile.target, "runner": self.profile.runner,
                   "settings": self.settings.as_dict(),
                   "repeat": self.settings.repeats_for(flops)}
        try:
            return self.runner.call(request, self.settings.run_timeout_s)
        except WorkerFailure as failure:
            return {"error_kind": f"run_{failure.kind}", "error_msg": str(failure)}
        except RuntimeError as error:
            return {"error_kind": "run_error", "error_msg": str(error)}
        finally:
            if os.path.exists(artifact):
                os.remove(artifact)

    def run_network(self, relax_json: str, database_dir: str | None, repeat: int = 10,
                    number: int = 1, warmup_runs: int = 3,
                    timeout_s: float = 600.0) -> dict[str, Any]:
        """Compile a Relax network with a MetaSchedule JSON database (None: untuned) on the
        runner and time it end to end with the profile's thread count. Raises WorkerFailure
        or RuntimeError (a compile or run error) instead of returning an error row."""
        settings = {**self.settings.as_dict(), "number": number, "warmup_runs": warmup_runs}
        return self.runner.call({"op": "run_network", "relax_json": relax_json,
                                 "database": database_dir, "target": self.profile.target,
                                 "runner": self.profile.runner, "settings": settings,
                                 "repeat": repeat}, timeout_s)

    def _prepare(self, job: MeasureJob) -> None:
        check = (self.settings.check_correctness
                 and job.workload_hash not in self._no_reference)
        request = {"op": "prepare", "workload_hash": job.workload_hash, "mod_json": job.mod_json,
                   "target": self.profile.target, "runner": self.profile.runner,
                   "artifact_dir": self.artifact_dir, "check": check}
        timeout = self.settings.build_timeout_s + self.settings.run_timeout_s
        try:
            self.runner.call(request, timeout)
        except (WorkerFailure, RuntimeError):
            if not check:
                raise
            # No reference (e.g. an unscheduled GPU kernel cannot build, or it crashes or
            # hangs): measure this task unchecked from now on.
            self._no_reference.add(job.workload_hash)
            self.runner.call({**request, "check": False}, timeout)

    def _run(self, job: MeasureJob, built: dict[str, Any]) -> MeasureResult:
        base = {"candidate_id": job.candidate_id, "build_s": built.get("build_s")}
        if "error_kind" in built:
            return MeasureResult(**base, error_kind=built["error_kind"],
                                 error_msg=built["error_msg"])
        request = {"op": "run", "workload_hash": job.workload_hash,
                   "artifact": built["artifact"], "target": self.profile.target,
                   "runner": self.profile.runner, "settings": self.settings.as_dict(),
                   "repeat": self.settings.repeats_for(job.flops)}
        start = time.perf_counter()
        try:
            out = self._call_run(job, request)
        except WorkerFailure as failure:
            return MeasureResult(**base, error_kind=f"run_{failure.kind}", error_msg=str(failure),
                                 run_wall_s=time.perf_counter() - start)
        except RuntimeError as error:
            return MeasureResult(**base, error_kind="run_error", error_msg=str(error),
                                 run_wall_s=time.perf_counter() - start)
        finally:
            if os.path.exists(built["artifact"]):
                os.remove(built["artifact"])
        if out["verified"] is False:
            return MeasureResult(**base, error_kind="wrong_result", verified=False,
                                 error_msg="outputs differ from the unscheduled function's",
                                 run_wall_s=out["run_wall_s"])
        return MeasureResult(**base, run_secs=tuple(out["run_secs"]), verified=out["verified"],
                             run_wall_s=out["run_wall_s"])

    def _call_run(self, job: MeasureJob, request: dict[str, Any]) -> dict[str, Any]:
        """The runner's answer; a runner without this task's inputs (new worker) prepares first."""
        try:
            return self.runner.call(request, self.settings.run_timeout_s)
        except _Unprepared:
            self._prepare(job)
            return self.runner.call(request, self.settings.run_timeout_s)

    def _prepare_all(self, jobs: Sequence[MeasureJob]) -> None:
        """Prepare every task of the batch (failures are retried or recorded by _run)."""
        for job in {j.workload_hash: j for j in jobs}.values():
            try:
                self._prepare(job)
            except (WorkerFailure, RuntimeError):
                pass

    def measure(self, jobs: Sequence[MeasureJob],
                on_result: Callable[[MeasureResult], None] | None = None) -> list[MeasureResult]:
        """Measure `jobs`: parallel builds, then serial runs. Every job yields one result.

        While the builders build, the otherwise idle runner prepares the batch's tasks (inputs
        and reference outputs; nothing is timed then).
        """
        preparing = threading.Thread(target=self._prepare_all, args=(jobs,))
        preparing.start()
        built = self._build_all(jobs)
        preparing.join()
        results = []
        for job in jobs:
            result = self._run(job, built[job.candidate_id])
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results


if __name__ == "__main__":  # a worker: python -m tasks.measure TARGET_JSON READ_FD WRITE_FD
    _worker_main(_Duplex(int(sys.argv[2]), int(sys.argv[3])), json.loads(sys.argv[1]))
