"""Every candidate a retune measured goes into the store, as the collect path's would.

A search measures programs near each task's optimum, which random sampling rarely reaches:
cost models learn from them beside the random samples (TenSet's and TLP's data are mostly
such programs). They are the MetaSchedule database's records, measured by tenforge's runner
with the profile's protocol, so they are stored under the profile's measurement settings, with
candidates of source 'tuning' and the retune's run id on each measurement (its provenance:
`tuning_runs.tuning_id` = `measurements.flow_run_id`). Failed candidates are stored as errors.
Nothing is measured again: a candidate collect already measured keeps its row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from core.hardware import HardwareProfile
from core.tvm_env import load_tvm, trace_json
from storage.ms_database import ms_result, open_json_database


def read_records(work_dir: str | Path, target: dict) -> dict[str, tuple[Any, list[Any]]]:
    """The tuning records of a MetaSchedule JSON database, by task workload hash."""
    database = open_json_database(Path(work_dir), create=False, target=target)
    from tvm.s_tir.meta_schedule.utils import shash2hex

    by_task: dict[str, tuple[Any, list[Any]]] = {}
    for record in database.get_all_tuning_records():
        mod = record.workload.mod
        by_task.setdefault(shash2hex(mod), (mod, []))[1].append(record)
    return by_task


def candidates_of(mod: Any, records: list[Any], target: dict) -> list[tuple[Any, list[float]]]:
    """(tasks.sampling.Candidate with PerStoreFeature features, run seconds) per record; the
    schedule hash is the scheduled module's, as the collect path keys candidates."""
    load_tvm(target)
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms
    from tvm.s_tir.meta_schedule.utils import shash2hex
    from tvm.target import Target

    from tasks.sampling import Candidate

    schedules = []
    fresh = s_tir.Schedule(mod)  # copied per record: 13x cheaper than constructing one
    for record in records:
        sch = fresh.copy()
        record.trace.apply_to_schedule(sch, remove_postproc=False)
        schedules.append(sch)
    context = ms.TuneContext(mod, target=Target(target), task_name="writeback", num_threads=1)
    features = ms.feature_extractor.PerStoreFeature(extract_workload=False).extract_from(
        context, [ms.MeasureCandidate(sch, ms.arg_info.ArgInfo.from_prim_func(sch.mod["main"]))
                  for sch in schedules])
    return [(Candidate(schedule_hash=shash2hex(sch.mod),
                       trace_json=trace_json(record.trace),
                       design_space=None, sample_seed=None,
                       features=feats.numpy().astype(np.float32)),
             [float(s) for s in (record.run_secs or [])])
            for sch, record, feats in zip(schedules, records, features)]


def store_tuning_measurements(db: str, profile: HardwareProfile, task_ids: dict[str, int],
                              work_dir: str | Path, run_id: str) -> dict[str, int]:
    """Write the tuning database in `work_dir` into the store; `task_ids`: workload hash ->
    task id of the tuned network's tasks (records of other workloads are left out). Returns
    how many records it read, candidates and measurements it added."""
    from dataclasses import replace

    from core.tvm_env import tvm_version
    from storage.block_names import block_renaming, rename_blocks
    from storage.store import Store
    from tasks.sampling import FEATURE_EXTRACTOR

    by_task = read_records(work_dir, profile.target)
    tvm = load_tvm(profile.target)
    # (the tuned module's JSON, its candidates): the store keeps another import's module for
    # a task when one came first, whose blocks may be named otherwise (storage/block_names.py)
    prepared = {h: (tvm.ir.save_json(mod), candidates_of(mod, records, profile.target))
                for h, (mod, records) in by_task.items() if h in task_ids}
    added = {"records": sum(len(r) for _, r in by_task.values()), "candidates": 0,
             "measurements": 0}
    settings = profile.measure
    with Store(db) as store, store.transaction():
        hardware_id = store.upsert_hardware(profile.as_row())
        settings_id = store.settings_id(settings.key(), settings.as_dict())
        for workload_hash, (mod_json, items) in prepared.items():
            task_id = task_ids[workload_hash]
            renaming = block_renaming(mod_json, store.task_modules([task_id])[task_id])
            added["candidates"] += store.insert_candidates(
                task_id, hardware_id,
                [replace(c, trace_json=rename_blocks(c.trace_json, renaming)) for c, _ in items],
                source="tuning", extractor=FEATURE_EXTRACTOR)
            ids = store.candidate_ids(task_id, hardware_id)
            added["measurements"] += store.insert_measurements(
                settings_id,
                [ms_result(ids[c.schedule_hash], secs, "while tuning") for c, secs in items],
                tvm_version(), flow_run_id=run_id)
    return added
