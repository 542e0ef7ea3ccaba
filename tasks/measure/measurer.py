"""Measurer: batches of candidates on one hardware profile, built in parallel on build
workers and run one at a time on a runner worker (see tasks/measure/__init__.py)."""

from __future__ import annotations

import os
import queue
import shutil
import tempfile
import threading
import time
from typing import Any, Callable, Iterator, Sequence

from core.hardware import HardwareProfile, MeasureSettings
from core.procs import pid_alive, usable_cores
from core.records import MeasureJob, MeasureResult
from core.tvm_env import GPU_TARGET_KINDS
from tasks.measure.build_cap import BuildCap
from tasks.measure.build_stream import BuildStream
from tasks.measure.process import Worker, WorkerFailure
from tasks.measure.protocol import Unprepared

# Builds run before a batch's timed runs, never beside them, so they may use every core; past
# 16 the workers' start-up (a TVM import each) outweighs what they save on a batch of 16.
MAX_BUILD_WORKERS = 16
# A measurer's compiled candidates live in ARTIFACT_PREFIX<pid>-*, removed on close. A process
# killed outright (SIGKILL, the OOM killer, a fault test) never closes: the next measurer
# removes the folders of owners that are gone.
ARTIFACT_PREFIX = "tenforge-artifacts-"
ORPHAN_AGE_S = 600.0  # untouched this long too: a temp dir shared across pid namespaces is safe


def sweep_orphaned_artifacts(root: str | None = None, min_age_s: float = ORPHAN_AGE_S) -> int:
    """Remove artifact folders under `root` (the temp dir) whose owning process is gone and
    that nothing changed for `min_age_s`; how many. A folder of a live pid stays, whoever owns
    it (pids are reused: a false "alive" only leaves a folder behind; the age guards against
    a false "gone", a measurer of another container that shares the temp dir)."""
    root = root or tempfile.gettempdir()
    removed = 0
    for name in os.listdir(root):
        if not name.startswith(ARTIFACT_PREFIX):
            continue
        pid = name[len(ARTIFACT_PREFIX):].split("-", 1)[0]
        if not pid.isdigit() or pid_alive(int(pid)):  # a pid-less name is not ours to judge
            continue
        path = os.path.join(root, name)
        try:
            if time.time() - os.stat(path).st_mtime < min_age_s:
                continue
        except OSError:  # removed meanwhile
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed += 1
    return removed


def default_build_workers() -> int:
    """One build worker per usable core (2 on a 2-vCPU machine, 16 on a 16-core GPU host)."""
    return max(1, min(MAX_BUILD_WORKERS, usable_cores()))


def runner_threads(profile: HardwareProfile) -> int:
    """TVM_NUM_THREADS of the runner: the profile's own on a CPU, whose timings it shapes; behind
    a GPU every usable host core, which only make the tasks' reference outputs there."""
    return usable_cores() if profile.target_kind in GPU_TARGET_KINDS else profile.num_threads


def overlaps_builds(profile: HardwareProfile) -> bool:
    """Whether a collect builds its next chunk while it runs this one (measure_chunks): behind
    a GPU, whose timings do not share the host CPU with the builds; never on a CPU."""
    return profile.target_kind in GPU_TARGET_KINDS


class Measurer:
    """Measures batches of candidates on one hardware profile. Close it (or use `with`)."""

    def __init__(self, profile: HardwareProfile, settings: MeasureSettings | None = None,
                 build_workers: int | None = None, overlap_builds: bool | None = None,
                 keep_asm: bool = False, build_cap: BuildCap | None = None):
        self.profile = profile
        # a tuning run's cut for builds far slower than its others (None: the settings' timeout)
        self.build_cap = build_cap
        # each build also reads its assembly into the asm columns (x86 only): ~0.07 s more
        self.keep_asm = keep_asm
        self.settings = settings or profile.measure
        self.overlap_builds = (overlaps_builds(profile) if overlap_builds is None
                               else overlap_builds)
        target = profile.target
        threads = str(runner_threads(profile))
        if build_workers is None:
            build_workers = default_build_workers()
        self.builders = [Worker(target, {"TVM_NUM_THREADS": "1"}) for _ in range(build_workers)]
        self.runner = Worker(target, {"TVM_NUM_THREADS": threads, "OMP_NUM_THREADS": threads})
        sweep_orphaned_artifacts()
        self.artifact_dir = tempfile.mkdtemp(prefix=f"{ARTIFACT_PREFIX}{os.getpid()}-")
        # Tasks whose reference output could not be made: never pay that failure again.
        self._no_reference: set[str] = set()
        self._artifacts = 0  # artifact file names of build_modules
        # Wall seconds spent in build phases so far (the builds of a batch overlap: this is the
        # batch's time, not the sum of its builds'); a tuning run splits its measuring with it.
        self.build_s = 0.0
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

    def _build_one(self, worker: Worker, request: dict[str, Any]) -> dict[str, Any]:
        """One build on `worker`: its answer plus `artifact`, or `error_kind`, `error_msg` and
        `build_s`. With a build cap the build may be cut sooner than the settings' timeout
        (`build_cut`)."""
        limit = self.settings.build_timeout_s
        timeout = self.build_cap.timeout(limit) if self.build_cap else limit
        start = time.perf_counter()
        try:
            result = worker.call(request, timeout)
        except WorkerFailure as failure:
            kind, message = f"build_{failure.kind}", str(failure)
            if self.build_cap and failure.kind == "timeout" and timeout < limit:
                kind, message = "build_cut", self.build_cap.note_cut(timeout)
            return {"error_kind": kind, "error_msg": message,
                    "build_s": time.perf_counter() - start}
        except RuntimeError as error:
            return {"error_kind": "build_error", "error_msg": str(error),
                    "build_s": time.perf_counter() - start}
        if self.build_cap:
            self.build_cap.finished(result.get("build_s"))
        return {"artifact": request["artifact"], **result}

    def _build_parallel(self, requests: dict[Any, dict[str, Any]], counted: bool = True
                        ) -> dict[Any, dict[str, Any]]:
        """Send build requests to the build workers in parallel; key -> outcome (the worker's
        answer plus `artifact`, or `error_kind`, `error_msg` and `build_s`). `counted`: the
        phase's wall time goes into `build_s`."""
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
                outcomes[key] = self._build_one(worker, request)

        threads = [threading.Thread(target=drain, args=(w,))
                   for w in self.builders[:len(requests)]]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if counted:
            self.build_s += time.monotonic() - started
        return outcomes

    def _build_request(self, job: MeasureJob) -> dict[str, Any]:
        return {"op": "build", "workload_hash": job.workload_hash, "mod_json": job.mod_json,
                "trace_json": job.trace_json, "target": self.profile.target,
                "artifact": os.path.join(self.artifact_dir, f"cand-{job.candidate_id}.so"),
                "asm": self.keep_asm}

    def _build_all(self, jobs: Sequence[MeasureJob]) -> dict[int, dict[str, Any]]:
        """Build every job on the build workers in parallel; candidate_id -> outcome."""
        return self._build_parallel({job.candidate_id: self._build_request(job) for job in jobs})

    def build_asm(self, jobs: Sequence[MeasureJob]) -> list[tuple[float, ...] | None]:
        """Build `jobs` for their asm columns alone (x86 CPUs; nothing runs): each one's
        columns, None where its build failed or its assembly could not be read. What
        re-ranking a model's picks by their code costs (tasks.asm_rerank); not counted in
        `build_s`, which is the measurements' building."""
        outcomes = self._build_parallel({job.candidate_id: {
            **self._build_request(job), "asm": True, "asm_only": True} for job in jobs},
            counted=False)
        return [tuple(outcomes[job.candidate_id]["asm"])
                if outcomes[job.candidate_id].get("asm") else None for job in jobs]

    # -------------------------------------------------- MetaSchedule's protocol (ms_backend)

    def build_modules(self, mod_jsons: Sequence[str]) -> list[dict[str, Any]]:
        """Compile scheduled IRModules (tvm.ir.save_json) in parallel, in order."""
        return self.build_requested(self.build_requests(mod_jsons))

    def yield_builds(self, niceness: int = 19) -> None:
        """Build at `niceness` from now on, so that builds take only the CPU the caller's own
        threads leave idle (tasks.ms_overlap builds while the search runs). The runner keeps
        its priority: timings are never niced."""
        for worker in self.builders:
            worker.set_niceness(niceness)

    def build_requests(self, mod_jsons: Sequence[str]) -> list[dict[str, Any]]:
        """The build requests for `mod_jsons`, each with the artifact path it will write: known
        before building, so a builder can hand the paths out while it builds (tasks.ms_overlap).
        Call from one thread: it numbers the artifacts."""
        requests = []
        for mod_json in mod_jsons:
            self._artifacts += 1
            # One folder per artifact: MetaSchedule's RemoveBuildArtifact deletes the folder.
            folder = os.path.join(self.artifact_dir, f"mod-{self._artifacts}")
            os.makedirs(folder)
            requests.append({"op": "build_module", "mod_json": mod_json,
                             "target": self.profile.target,
                             "artifact": os.path.join(folder, "lib.so")})
        return requests

    def build_requested(self, requests: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """Build `requests` (build_requests') in parallel; their outcomes, in order."""
        outcomes = self._build_parallel(dict(enumerate(requests)))
        return [outcomes[i] for i in range(len(requests))]

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

    def run_library(self, library: str, params: str, inputs: list[dict[str, Any]],
                    weight_names: list[str], repeat: int = 30,
                    timeout_s: float = 600.0) -> dict[str, Any]:
        """Time an exported network library (tasks/deploy.py) end to end on the runner, with
        the profile's thread count: `inputs` are [{"shape", "dtype"}], the weights come from
        `params` in `weight_names` order. Raises WorkerFailure or RuntimeError."""
        settings = {**self.settings.as_dict(), "number": 1, "warmup_runs": 3}
        return self.runner.call({"op": "run_library", "library": library, "params": params,
                                 "inputs": inputs, "weight_names": weight_names,
                                 "target": self.profile.target, "runner": self.profile.runner,
                                 "settings": settings, "repeat": repeat}, timeout_s)

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
        base = {"candidate_id": job.candidate_id, "build_s": built.get("build_s"),
                "asm": tuple(built["asm"]) if built.get("asm") else None}
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
                                 error_msg="outputs differ from the unscheduled function's: "
                                 + str(out.get("mismatch")),
                                 run_wall_s=out["run_wall_s"])
        return MeasureResult(**base, run_secs=tuple(out["run_secs"]), verified=out["verified"],
                             run_wall_s=out["run_wall_s"])

    def _call_run(self, job: MeasureJob, request: dict[str, Any]) -> dict[str, Any]:
        """The runner's answer; a runner without this task's inputs (new worker) prepares first."""
        try:
            return self.runner.call(request, self.settings.run_timeout_s)
        except Unprepared:
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
        return self._run_all(jobs, lambda job: built[job.candidate_id], on_result)

    def _run_all(self, jobs: Sequence[MeasureJob], outcome: Callable[[MeasureJob], dict],
                 on_result: Callable[[MeasureResult], None] | None) -> list[MeasureResult]:
        results = []
        for job in jobs:
            result = self._run(job, outcome(job))
            results.append(result)
            if on_result is not None:
                on_result(result)
        return results

    def measure_chunks(self, chunks: Sequence[Sequence[MeasureJob]],
                       on_result: Callable[[MeasureResult], None] | None = None
                       ) -> Iterator[list[MeasureResult]]:
        """Measure `chunks` in order, yielding each chunk's results (in its jobs' order) as
        soon as it is done, for the caller to commit. With `overlap_builds` the builders
        already build the next chunk while this one waits for its slowest build and runs
        (tasks/measure/build_stream.py); otherwise each chunk is `measure`d in turn. This
        measurer's `build_s` counts only the chunk-by-chunk builds."""
        if not self.overlap_builds:
            for jobs in chunks:
                yield self.measure(jobs, on_result)
            return
        stream = BuildStream(self.builders,
                             lambda worker, job: self._build_one(worker, self._build_request(job)),
                             chunks)
        try:
            for index, jobs in enumerate(chunks):
                stream.start_chunk(index)
                self._prepare_all(jobs)  # the runner's share, while the builders build
                yield self._run_all(jobs, stream.outcome, on_result)
        finally:
            stream.close()
