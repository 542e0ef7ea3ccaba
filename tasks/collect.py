"""The collect steps as plain functions: import networks, sample candidates, measure what is missing.

Resumable by construction: sampling is deterministic per seed and stored candidates are
unique per (task, hardware, schedule hash); measurements are unique per (candidate, settings)
and written batch by batch in one transaction each. A re-run after a crash re-derives the same
candidates, finds them stored, and measures only those without a measurement.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.paths import PROJECT_ROOT
from core.progress import bar
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.measure import MeasureJob, Measurer, MeasureResult

DEFAULT_DB = PROJECT_ROOT / "data" / "tenforge.duckdb"


def default_db() -> str:
    return os.environ.get("TENFORGE_DB", str(DEFAULT_DB))


def default_outbox() -> str | None:
    """Where this machine's collect runs export their shards ($TENFORGE_OUTBOX; unset: none)."""
    return os.environ.get("TENFORGE_OUTBOX") or None


def check_outbox(outbox: str | None) -> None:
    """An outbox must be a folder we can write (created when its parent exists)."""
    if not outbox:
        return
    path = Path(outbox)
    if path.exists() and not path.is_dir():
        raise TenforgeError(f"outbox {path} is a file; give a folder for the exported shards")
    if not path.exists() and not path.parent.is_dir():
        raise TenforgeError(f"outbox {path}: folder {path.parent} does not exist")


def prepare_db_path(db: str | Path) -> Path:
    """The store path; the default data/ folder is created, any other folder must exist."""
    path = Path(db).expanduser().resolve()
    if path == DEFAULT_DB.resolve():
        path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise TenforgeError(f"--db {path} is a folder; give a file path such as "
                            f"{path / 'tenforge.duckdb'}")
    if not path.parent.is_dir():
        raise TenforgeError(f"cannot create store {path}: folder {path.parent} does not exist")
    if not path.exists():  # a new store: find out now, not after a run's work, that we can
        try:
            tempfile.TemporaryFile(dir=path.parent).close()
        except OSError as exc:
            raise TenforgeError(f"store {path} cannot be written: cannot create files in "
                                f"{path.parent} ({exc.strerror}); pick a writable --db") from None
    return path


def check_positive_ints(**values: object) -> None:
    """Refuse the first value that is not a positive integer (bools are not integers here);
    names are keyword names, shown with spaces: measure_batch -> "measure batch"."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise TenforgeError(f"{name.replace('_', ' ')} must be a positive integer, "
                                f"got {value!r}")


def validate_collect(hardware: str, networks: Sequence[str], candidates_per_task: int,
                     batch_size: int, measure_batch: int = 16) -> HardwareProfile:
    """Check every collect parameter before anything is written; return the profile."""
    from tasks.networks import network_def  # torch: imported only when a network is named

    if isinstance(networks, str):
        networks = [networks]
    if not networks:
        raise TenforgeError("networks is empty; name at least one (`tenforge networks`)")
    for name in networks:
        network_def(name)
    check_positive_ints(candidates_per_task=candidates_per_task, batch_size=batch_size,
                        measure_batch=measure_batch)
    profile = resolve_profile(hardware)
    check_runnable_here(profile)
    return profile


def register_network(db: str, profile: HardwareProfile, network: str, batch_size: int,
                     input_size: int | None = None) -> list[int]:
    """Import `network` into TVM, store it with its tasks; return the task ids."""
    from storage.store import Store
    from tasks.networks import network_def
    from tasks.workloads import extract_network_tasks

    size = network_def(network).default_size if input_size is None else input_size
    tasks = extract_network_tasks(network, batch_size, size, profile.target)
    with Store(db) as store, store.transaction():
        store.upsert_hardware(profile.as_row())
        network_id = store.upsert_network(network, batch_size, size)
        ids = store.upsert_tasks(tasks, network_id)
    return [ids[t.workload_hash] for t in tasks]


def sample_task(db: str, profile: HardwareProfile, task_id: int, count: int,
                seed: int) -> dict[str, int]:
    """Make sure task `task_id` has `count` distinct candidates for `profile` (fewer if its
    design space has fewer); returns how many were new and how many samples were invalid."""
    from storage.store import Store
    from tasks.sampling import FEATURE_EXTRACTOR, sample_candidates

    with Store(db) as store:
        hardware_id = store.upsert_hardware(profile.as_row())
        known = store.candidate_hashes(task_id, hardware_id)
        mod_json = store.task_modules([task_id])[task_id]
    if len(known) >= count:
        return {"new": 0, "invalid": 0}
    candidates, invalid = sample_candidates(mod_json, profile.target, count, seed, known)
    with Store(db) as store, store.transaction():
        new = store.insert_candidates(task_id, hardware_id, candidates, extractor=FEATURE_EXTRACTOR)
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
                    build_workers: int = 2,
                    on_progress: Callable[[int, int], None] | None = None) -> dict[str, float]:
    """Measure every candidate of `profile` (in `task_ids`) that has no measurement yet;
    `on_progress(done, total)` after every candidate."""
    from core.tvm_env import tvm_version
    from storage.store import Store

    settings = profile.measure
    with Store(db) as store:
        hardware_id = store.upsert_hardware(profile.as_row())
        settings_id = store.settings_id(settings.key(), settings.as_dict())
        pending = store.pending_candidates(hardware_id, settings_id, task_ids)
        modules = store.task_modules(sorted({p["task_id"] for p in pending}))
    progress = Progress(total=len(pending))
    report(f"{profile.name}: {len(pending)} candidates to measure "
           f"(settings {settings.key()}, {build_workers} build workers)")
    version = tvm_version()
    with Measurer(profile, settings, build_workers=build_workers) as measurer:
        for start in range(0, len(pending), measure_batch):
            chunk = pending[start:start + measure_batch]
            jobs = [MeasureJob(p["candidate_id"], p["workload_hash"], modules[p["task_id"]],
                               p["trace_json"], p["flops"]) for p in chunk]
            results = measurer.measure(jobs, on_result=progress.add)
            if on_progress is not None:
                on_progress(progress.done, progress.total)
            with Store(db) as store, store.transaction():
                store.insert_measurements(settings_id, results, version, flow_run_id)
            report(progress.line())
    if on_progress is not None and not pending:
        on_progress(0, 0)  # nothing to do is done
    return {"measured": progress.done, "errors": progress.errors,
            "candidates_per_min": round(progress.per_minute, 1),
            "seconds": round(time.monotonic() - progress.started, 1)}
