"""Import and export MetaSchedule JSON databases (database_workload.json +
database_tuning_record.json, as tune_tir / tune_relax write them).

Both directions go through TVM's own JSONDatabase, so what is read is what TVM would read and
what is written is what TVM itself writes. MetaSchedule records a failed candidate with
run_secs = [1e10]; such records become error rows here, and error rows export back that way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from storage.block_names import block_renaming, rename_blocks
from storage.store import Store

WORKLOAD_FILE = "database_workload.json"
RECORD_FILE = "database_tuning_record.json"
MS_DATABASE_FILES = (WORKLOAD_FILE, RECORD_FILE)  # the two files a database folder holds
MS_FAILED_RUN_SECS = 1e10  # MetaSchedule's marker for a candidate that did not build or run
IMPORTED_SETTINGS_KEY = "imported-metaschedule"


@dataclass(frozen=True)
class _Candidate:  # what Store.insert_candidates needs of an imported record (no features)
    schedule_hash: str
    trace_json: str
    design_space: int | None = None
    sample_seed: int | None = None


def open_json_database(work_dir: Path, create: bool, target: Any = "llvm") -> Any:
    """MetaSchedule's JSON database in `work_dir` (its two files); `create`: allow them missing."""
    from core.tvm_env import load_tvm

    load_tvm(target)
    from tvm.s_tir import meta_schedule as ms

    return ms.database.JSONDatabase(path_workload=str(work_dir / WORKLOAD_FILE),
                                    path_tuning_record=str(work_dir / RECORD_FILE),
                                    allow_missing=create)


def valid_secs(run_secs: Any) -> list[float] | None:
    """Run seconds as floats, or None where there are none or MetaSchedule marked them failed
    (the one check of a failed record: the hold, the import and the write-back use it)."""
    secs = [float(s) for s in run_secs or []]
    return secs if secs and max(secs) < MS_FAILED_RUN_SECS else None


def valid_run_secs(record: Any) -> list[float] | None:
    """A record's run seconds, or None where it has none or MetaSchedule marked it failed."""
    return valid_secs(record.run_secs)


def ms_result(candidate_id: int, run_secs: Any, where: str) -> Any:
    """A MetaSchedule record's run seconds as a MeasureResult: an error row where it failed
    (`where` says where that happened, for the stored message)."""
    from core.records import MeasureResult

    secs = valid_secs(run_secs)
    if secs is None:
        return MeasureResult(candidate_id, error_kind="run_error",
                             error_msg=f"failed {where} (MetaSchedule run_secs 1e10 or missing)")
    return MeasureResult(candidate_id, run_secs=tuple(secs))


def records_as_measured(work_dir: str | Path,
                        target: Any = "llvm") -> list[tuple[Any, list[Any]]]:
    """(workload, run_secs) of every record in the order the search measured them: the records
    file's, which appends (JSONDatabase.get_all_tuning_records sorts them by run time). Each
    workload is decoded once, by TVM, and the records of one workload share it."""
    return [(workload, run_secs) for workload, _, run_secs in traced_records(work_dir, target)]


def traced_records(work_dir: str | Path,
                   target: Any = "llvm") -> list[tuple[Any, Any, list[Any]]]:
    """records_as_measured with each record's trace as stored, JSON ([instructions,
    decisions]): (workload, trace, run_secs)."""
    from core.tvm_env import load_tvm

    tvm = load_tvm(target)
    from tvm.s_tir import meta_schedule as ms

    folder = Path(work_dir)
    workloads = [ms.database.Workload.from_json(tvm.runtime.convert(json.loads(line)))
                 for line in (folder / WORKLOAD_FILE).read_text().splitlines() if line.strip()]
    records = []
    for line in (folder / RECORD_FILE).read_text().splitlines():
        if line.strip():
            index, (trace, run_secs, *_rest) = json.loads(line)
            records.append((workloads[index], trace, run_secs))
    return records


def records_by_task(work_dir: str | Path,
                    target: Any = "llvm") -> dict[str, list[tuple[float, Any]]]:
    """{workload hash: [(mean run seconds, record)] of its valid records, fastest first}."""
    from core.tvm_env import structural_hash_hex

    tasks: dict[str, list[tuple[float, Any]]] = {}
    for record in open_json_database(Path(work_dir), create=False,
                                     target=target).get_all_tuning_records():
        secs = valid_run_secs(record)
        if secs:
            tasks.setdefault(structural_hash_hex(record.workload.mod), []).append(
                (sum(secs) / len(secs), record))
    for records in tasks.values():
        records.sort(key=lambda pair: pair[0])
    return tasks


def _check_json_lines(path: Path) -> None:
    """Fail with the file and line number on the first line that is not a JSON array."""
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TenforgeError(f"{path}:{number}: not valid JSON ({exc.msg}); expected one "
                                    "JSON array per line as MetaSchedule writes") from None
            if not isinstance(value, list) or len(value) != 2:
                raise TenforgeError(f"{path}:{number}: expected a 2-element JSON array "
                                    "(MetaSchedule database format)")


def import_ms(work_dir: str | Path, profile: Any, db: str) -> dict[str, int]:
    """Load a MetaSchedule JSON database measured on `profile` into the store at `db`."""
    from tvm.s_tir import analysis
    from tvm.s_tir.meta_schedule.utils import shash2hex

    from core.records import TaskInfo
    from core.tvm_env import load_tvm, trace_json, tvm_version

    work = Path(work_dir)
    for name in MS_DATABASE_FILES:
        if not (work / name).is_file():
            raise TenforgeError(f"{work} is not a MetaSchedule database folder: {name} is missing")
        _check_json_lines(work / name)
    tvm = load_tvm(profile.target)  # the traces may use the target's tensor intrinsics
    try:
        database = open_json_database(work, create=False, target=profile.target)
        records = list(database.get_all_tuning_records())
    except Exception as exc:  # noqa: BLE001 - TVM raises TVMError / ValueError on bad content
        raise TenforgeError(f"{work}: not a readable MetaSchedule database "
                            f"({str(exc).strip().splitlines()[-1]})") from None

    tasks: dict[str, TaskInfo] = {}
    by_task: dict[str, list[tuple[_Candidate, list[float]]]] = {}
    for record in records:
        mod = record.workload.mod
        workload_hash = shash2hex(mod)
        if workload_hash not in tasks:
            name = str(mod["main"].attrs["global_symbol"]) if "global_symbol" in (
                mod["main"].attrs or {}) else "main"
            tasks[workload_hash] = TaskInfo(name, workload_hash,
                                            float(analysis.estimate_tir_flops(mod)), 1,
                                            tvm.ir.save_json(mod))
        scheduled = _replay(tvm, mod, record.trace)
        candidate = _Candidate(shash2hex(scheduled),
                               trace_json(record.trace))
        secs = [float(s) for s in (record.run_secs or [])]
        by_task.setdefault(workload_hash, []).append((candidate, secs))

    with Store(db) as store, store.transaction():
        hardware_id = store.upsert_hardware(profile.as_row())
        settings_id = store.settings_id(IMPORTED_SETTINGS_KEY,
                                        {"source": "MetaSchedule JSON database"})
        ids = store.upsert_tasks(list(tasks.values()))
        new_measurements = 0
        for workload_hash, items in by_task.items():
            task_id = ids[workload_hash]
            # the store may keep another import's module for the task, its blocks named
            # otherwise: the traces take its names (storage/block_names.py)
            renaming = block_renaming(tasks[workload_hash].mod_json,
                                      store.task_modules([task_id])[task_id])
            items = [(replace(c, trace_json=rename_blocks(c.trace_json, renaming)), secs)
                     for c, secs in items]
            store.insert_candidates(task_id, hardware_id, [c for c, _ in items], source="imported")
            candidate_ids = dict(store.query(
                "SELECT schedule_hash, candidate_id FROM candidates WHERE task_id = ? AND "
                "hardware_id = ?", [task_id, hardware_id]))
            results = [ms_result(candidate_ids[c.schedule_hash], secs, "in MetaSchedule")
                       for c, secs in items]
            new_measurements += store.insert_measurements(settings_id, results, tvm_version(),
                                                          flow_run_id=None)
    return {"records": len(records), "workloads": len(tasks), "new_measurements": new_measurements}


def _replay(tvm: Any, mod: Any, trace: Any) -> Any:
    from tvm import s_tir

    sch = s_tir.Schedule(mod)
    trace.apply_to_schedule(sch, remove_postproc=False)
    return sch.mod


def export_ms(db: str, hardware: str, work_dir: str | Path) -> dict[str, int]:
    """Write `hardware`'s measured candidates from the store as a MetaSchedule JSON database."""
    from core.tvm_env import load_tvm

    work = Path(work_dir)
    if any((work / name).exists() for name in MS_DATABASE_FILES):
        raise TenforgeError(f"{work} already holds a MetaSchedule database; export into an "
                            "empty or new folder")
    with Store(db, read_only=True) as store:
        hardware_id = store.hardware_id(hardware)
        target = json.loads(store.scalar("SELECT target_json FROM hardware WHERE hardware_id = ?",
                                         [hardware_id]))
        rows = store.query(
            "SELECT t.task_id, t.mod_json, c.trace_json, m.run_secs, m.error_kind "
            "FROM measurements m JOIN candidates c USING (candidate_id) JOIN tasks t USING "
            "(task_id) WHERE c.hardware_id = ? ORDER BY t.task_id, m.measurement_id",
            [hardware_id])
    tvm = load_tvm(target)
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    try:
        work.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise TenforgeError(f"cannot create {work}: {exc.strerror}") from None
    database = open_json_database(work, create=True, target=target)
    tvm_target = Target(target)
    workloads: dict[int, Any] = {}
    skipped: dict[str, int] = {}
    for task_id, mod_json, trace_json, run_secs, error_kind in rows:
        if task_id not in workloads:
            workloads[task_id] = database.commit_workload(tvm.ir.load_json(mod_json))
        workload = workloads[task_id]
        sch = s_tir.Schedule(workload.mod)
        try:
            s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace_json), sch)
        except Exception as exc:  # noqa: BLE001 - TVM's ScheduleError
            # a store loaded before storage/block_names.py may hold traces of another
            # import's block names: left out (and counted), not the end of the export
            line = (str(exc).strip().splitlines() or ["?"])[-1][:160]
            skipped[line] = skipped.get(line, 0) + 1
            continue
        secs = [MS_FAILED_RUN_SECS] if error_kind else [float(s) for s in run_secs]
        database.commit_tuning_record(ms.database.TuningRecord(
            sch.trace, workload, run_secs=secs, target=tvm_target,
            args_info=ms.arg_info.ArgInfo.from_prim_func(workload.mod["main"])))
    return {"records": len(rows) - sum(skipped.values()), "workloads": len(workloads),
            "skipped": skipped}


def records_summary(work_dir: str | Path) -> list[tuple[str, str, tuple[float, ...]]]:
    """(workload hash, canonical trace JSON, run_secs) of every record: for comparing databases."""
    from tvm.s_tir.meta_schedule.utils import shash2hex

    from core.tvm_env import to_plain_json

    database = open_json_database(Path(work_dir), create=False)
    out = []
    for record in database.get_all_tuning_records():
        trace = json.dumps(to_plain_json(record.trace.as_json()), sort_keys=True)
        secs = tuple(np.round([float(s) for s in (record.run_secs or [])], 12))
        out.append((shash2hex(record.workload.mod), trace, secs))
    return sorted(out)
