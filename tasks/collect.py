"""The collect steps as plain functions: import networks, sample candidates, measure what is
missing.

Resumable by construction: sampling is deterministic per seed and stored candidates are
unique per (task, hardware, schedule hash); measurements are unique per (candidate, settings)
and written batch by batch in one transaction each. A re-run after a crash re-derives the same
candidates, finds them stored, and measures only those without a measurement.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.progress import bar
from core.spec import Spec
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.measure import MeasureJob, Measurer, MeasureResult
from tasks.measure.measurer import default_build_workers
from tasks.sources import Workload
from tasks.validation import check_db_path, check_outbox, check_positive_ints, default_outbox


@dataclass(frozen=True)
class CollectSpec(Spec):
    """A validated collect request (the profile's real name, the outbox resolved)."""

    hardware: str
    networks: tuple[str, ...]  # as named: zoo or registered names, or file references
    workloads: tuple[Workload, ...]  # what each resolved to (tasks/sources.py)
    candidates_per_task: int
    seed: int
    batch_size: int
    measure_batch: int
    outbox: str | None
    input_size: int | None = None  # zoo networks' size (None: each one's default)
    graph: str = "exported"  # how the networks are prepared (core.graphs.GRAPHS)
    simt: bool = False  # a GPU: also sample each task's SIMT space (tasks.sampling.SIMT_RULES)
    reuse_tasks: bool = False  # zoo networks the store lists already are not imported again
    asm: bool = False  # each build also keeps its asm columns (an x86 CPU profile)


def validate_collect(db: str | None, hardware: str, networks: Sequence[str],
                     candidates_per_task: int, seed: int = 0, batch_size: int = 1,
                     measure_batch: int = 16, outbox: str | None = None,
                     input_size: int | None = None, graph: str = "exported",
                     simt: bool = False, reuse_tasks: bool = False,
                     asm: bool = False) -> CollectSpec:
    """Check every collect parameter before anything is written (writes nothing itself)."""
    from core.graphs import check_graph, resolve_graph
    from tasks.network_registry import check_registrable
    from tasks.sources import resolve_workload

    if isinstance(networks, str):
        networks = [networks]
    if not networks:
        raise TenforgeError("networks is empty; name at least one (`tenforge networks`)")
    check_graph(graph)
    path = check_db_path(db)
    workloads = tuple(resolve_workload(name, path) for name in networks)
    for workload in workloads:
        check_registrable(path, workload)
    if input_size is not None:
        check_positive_ints(input_size=input_size)
    check_positive_ints(candidates_per_task=candidates_per_task, batch_size=batch_size,
                        measure_batch=measure_batch)
    profile = resolve_profile(hardware)
    check_runnable_here(profile)
    if simt and profile.target_kind != "cuda":
        raise TenforgeError(f"--simt samples a GPU's SIMT space beside its tensor-core one; "
                            f"{profile.name!r} is a {profile.target_kind} profile: leave "
                            "--simt out, or name a CUDA profile (`tenforge hardware`)")
    if asm and not profile.x86_cpu:
        raise TenforgeError(f"--asm reads x86 assembly; {profile.name!r} is a "
                            f"{profile.target_kind}/{profile.arch or '?'} profile: leave --asm "
                            "out, or name an x86 CPU profile (`tenforge hardware`)")
    graph = resolve_graph(graph, profile.target_kind, profile.features.get("vector_unit_bytes", 0))
    outbox = outbox or default_outbox()
    check_outbox(outbox)
    return CollectSpec(db=path, hardware=profile.name, networks=tuple(networks),
                       workloads=workloads,
                       candidates_per_task=candidates_per_task, seed=seed,
                       batch_size=batch_size, measure_batch=measure_batch, outbox=outbox,
                       input_size=input_size, graph=graph, simt=simt,
                       reuse_tasks=reuse_tasks, asm=asm)


def register_network(db: str, profile: HardwareProfile, network: str | Workload,
                     batch_size: int, input_size: int | None = None,
                     graph: str = "exported", reuse_stored: bool = False) -> list[int]:
    """Import `network` (a zoo name or a workload) into TVM, prepared as `graph`, store it with
    its tasks, and register the profile (the collect's one write of the hardware row); return
    the task ids. A user's file is registered as a workload too (tasks/network_registry.py).

    `reuse_stored`: a zoo network the store already lists (same graph, batch and size) is not
    imported again; its stored tasks are returned. Importing takes 10-40 s a network (70 s of
    each 7-minute lease call on the H200 went to resnet18, mobilenet_v2 and BERT), and a
    presampled or resumed store has them all. The store's list is what an earlier import
    made: a store from another TVM version may list other tasks than this one would extract."""
    if reuse_stored:
        stored = stored_task_ids(db, network, batch_size, input_size, graph)
        if stored:
            from storage.store import Store

            with Store(db) as store, store.transaction():
                store.upsert_hardware(profile.as_row())
            return stored
    return list(network_task_ids(db, profile, network, batch_size, input_size, graph).values())


def stored_task_ids(db: str, network: str | Workload, batch_size: int,
                    input_size: int | None = None, graph: str = "exported") -> list[int]:
    """The task ids the store lists for zoo `network` at this batch, size and graph, in task id
    order (empty: not stored, or not a zoo network, whose file may have changed)."""
    from core.graphs import stored_network_name
    from storage.queries import stored_network_tasks
    from storage.store import Store

    workload = _as_workload(network)
    if not workload.is_zoo or not os.path.exists(db):
        return []
    with Store(db, read_only=True) as store:
        return stored_network_tasks(store, stored_network_name(workload.name, graph),
                                    batch_size, _zoo_size(workload, input_size))


def _as_workload(network: str | Workload) -> Workload:
    from tasks.sources import ZOO

    return network if isinstance(network, Workload) else Workload(network, ZOO, network)


def _zoo_size(workload: Workload, input_size: int | None) -> int:
    """A zoo network's stored input size: `input_size`, or the network's default."""
    from tasks.networks import network_def

    return network_def(workload.name).default_size if input_size is None else input_size


def network_task_ids(db: str, profile: HardwareProfile, network: str | Workload,
                     batch_size: int, input_size: int | None = None,
                     graph: str = "exported") -> dict[str, int]:
    """register_network's work; workload hash -> task id, in the network's task order.
    A `graph` other than "exported" (core.graphs.GRAPHS) is stored as a network of its
    own name (core.graphs.stored_network_name)."""
    from core.graphs import stored_network_name
    from storage.store import Store
    from tasks.network_registry import ensure_registered
    from tasks.workloads import extract_network_tasks

    workload = _as_workload(network)
    if workload.is_zoo:
        size = _zoo_size(workload, input_size)
    else:  # its inputs bring their own sizes
        ensure_registered(db, workload, profile.target)
        size = 0
    tasks = extract_network_tasks(workload, batch_size, size, profile.target, graph)
    with Store(db) as store, store.transaction():
        store.upsert_hardware(profile.as_row())
        network_id = store.upsert_network(stored_network_name(workload.name, graph),
                                          batch_size, size)
        ids = store.upsert_tasks(tasks, network_id)
    return {t.workload_hash: ids[t.workload_hash] for t in tasks}


def sample_task(db: str, profile: HardwareProfile, task_id: int, count: int,
                seed: int, simt: bool = False) -> dict[str, int]:
    """Make sure task `task_id` has `count` distinct candidates for `profile` (fewer if its
    design space has fewer); returns how many were new and how many samples were invalid.

    `simt`: `count` candidates of the task's SIMT space instead (a GPU's space without tensor
    cores, tasks.sampling.SIMT_RULES), after the default space's: its stored candidates that
    use no tensor core count towards it. A task none of whose candidates uses a tensor core
    has no other space, so it is left alone (sampling it again found nothing new, slowly:
    1,024 tries a small task on a lent H200, 2.3 of its 7 minutes).

    Sampling is seeded: a task whose space gave fewer than `count` is noted (table
    sampled_out), and asking again with the same seed for no more is skipped (a lease
    re-sampled a presampled store's exhausted tasks for ~100 s of its 7 minutes)."""
    from core.pause import wait_while_paused
    from storage.sampled_out import note_sampled_out, sampled_out
    from storage.store import Store
    from tasks.sampling import (
        FEATURE_EXTRACTOR,
        SIMT_GIVE_UP_AFTER,
        SIMT_RULES,
        NoDesignSpace,
        sample_candidates,
        uses_tensor_cores,
    )

    space = "simt" if simt else "default"
    # no checkpoint per task (~2 s each on a seed-sized store, Store's docstring): the
    # collection's measuring and its run record, which follow, fold the log into the file
    with Store(db, checkpoint=False) as store:
        hardware_id = store.hardware_id(profile.name)  # registered by register_network
        if sampled_out(store, task_id, hardware_id, seed, space) >= count:
            return {"new": 0, "invalid": 0}
        if simt:
            traces = store.candidate_traces(task_id, hardware_id)
            if not any(uses_tensor_cores(trace) for _, trace in traces):
                return {"new": 0, "invalid": 0}
            known = [h for h, trace in traces if not uses_tensor_cores(trace)]
        else:
            known = store.candidate_hashes(task_id, hardware_id)
        mod_json = store.task_modules([task_id])[task_id]
    if len(known) >= count:
        return {"new": 0, "invalid": 0}
    wait_while_paused()  # a benchmark asked for a quiet machine (core/pause.py)
    simt_space = {"give_up_after": SIMT_GIVE_UP_AFTER, "rules": SIMT_RULES}
    try:
        candidates, invalid = sample_candidates(mod_json, profile.target, count, seed, known,
                                                **(simt_space if simt else {}))
    except NoDesignSpace as exc:
        # one task TVM cannot span must not end a collection of hundreds (it did, session 51);
        # on a GPU its SIMT space may still be there: sample that (a task of one kind only)
        fallback = profile.target_kind == "cuda" and not simt
        print(f"WARNING: task {task_id}: {exc}; "
              + ("sampling its SIMT space (MetaSchedule's plain cuda rules) instead"
                 if fallback else "no candidates for it"), flush=True)
        candidates, invalid = [], 0
        if fallback:
            try:
                candidates, invalid = sample_candidates(mod_json, profile.target, count, seed,
                                                        known, **simt_space)
            except NoDesignSpace as again:
                print(f"WARNING: task {task_id}: {again}; no candidates for it", flush=True)
    with Store(db, checkpoint=False) as store, store.transaction():
        new = store.insert_candidates(task_id, hardware_id, candidates, extractor=FEATURE_EXTRACTOR)
        if len(known) + len(candidates) < count:  # the space gave what it has for this seed
            note_sampled_out(store, task_id, hardware_id, seed, space, count,
                             len(known) + len(candidates))
    return {"new": new, "invalid": invalid}


@dataclass
class Progress:
    """Counts for a long measurement, and the one-line report people watch."""

    total: int
    done: int = 0
    errors: int = 0
    started: float = field(default_factory=time.monotonic)

    def add(self, result: MeasureResult) -> None:
        self.done += 1
        self.errors += result.error_kind is not None

    @property
    def per_minute(self) -> float:
        elapsed = time.monotonic() - self.started
        return 60.0 * self.done / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        rate = self.per_minute
        eta = (self.total - self.done) / rate * 60 if rate > 0 else float("nan")
        return (f"{bar(self.done, self.total)} measured {self.done}/{self.total} at "
                f"{rate:.1f} candidates/min, {self.errors} errors, ETA {eta:.0f} s")


def measure_pending(db: str, profile: HardwareProfile, task_ids: Sequence[int] | None,
                    measure_batch: int, flow_run_id: str | None,
                    report: Callable[[str], None] = print,
                    build_workers: int | None = None,
                    on_progress: Callable[[int, int], None] | None = None,
                    measurer_factory: Callable[..., Any] = Measurer,
                    keep_asm: bool = False) -> dict[str, float]:
    """Measure every candidate of `profile` (in `task_ids`) that has no measurement yet;
    `on_progress(done, total)` after every candidate. `measurer_factory(profile, settings,
    build_workers=...)` makes the measurer (a context manager whose `measure_chunks(chunks,
    on_result)` yields each chunk's results; each chunk is committed as it comes):
    tasks.measure.Measurer, or a test double that compiles nothing. `keep_asm` (an x86 CPU
    profile): each build's asm columns are stored with its measurement (features rows)."""
    from core.tvm_env import tvm_version
    from storage.feature_rows import ASM_EXTRACTOR, insert_feature_rows
    from storage.store import Store

    settings = profile.measure
    build_workers = build_workers or default_build_workers()
    with Store(db) as store:
        hardware_id = store.hardware_id(profile.name)  # registered by register_network
        settings_id = store.settings_id(settings.key(), settings.as_dict())
        pending = store.pending_candidates(hardware_id, settings_id, task_ids)
        modules = store.task_modules(sorted({p["task_id"] for p in pending}))
    progress = Progress(total=len(pending))
    report(f"{profile.name}: {len(pending)} candidates to measure "
           f"(settings {settings.key()}, {build_workers} build workers)")
    version = tvm_version()
    jobs = [MeasureJob(p["candidate_id"], p["workload_hash"], modules[p["task_id"]],
                       p["trace_json"], p["flops"]) for p in pending]
    chunks = [jobs[start:start + measure_batch] for start in range(0, len(jobs), measure_batch)]
    # with keep_asm the builds also keep the asm columns (models/asm_features.py): a model
    # that reads them trains on this data without rebuilding it (`tenforge dataset asm`).
    # Not by default: printing the assembly is a second LLVM pass (bench/asm_cost.py)
    with measurer_factory(profile, settings, build_workers=build_workers,
                          keep_asm=keep_asm) as measurer:
        for results in measurer.measure_chunks(chunks, on_result=progress.add):
            if on_progress is not None:
                on_progress(progress.done, progress.total)
            with Store(db) as store, store.transaction():
                store.insert_measurements(settings_id, results, version, flow_run_id)
                built = [r for r in results if r.asm is not None]
                if built:
                    insert_feature_rows(store, [r.candidate_id for r in built], ASM_EXTRACTOR,
                                        np.array([r.asm for r in built], np.float32))
            report(progress.line())
    if on_progress is not None and not pending:
        on_progress(0, 0)  # nothing to do is done
    return {"measured": progress.done, "errors": progress.errors,
            "candidates_per_min": round(progress.per_minute, 1),
            "seconds": round(time.monotonic() - progress.started, 1)}
