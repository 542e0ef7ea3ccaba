"""The MetaSchedule JSON database folders a bench was given: checked before any work starts,
and their valid records by task."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from storage.ms_database import MS_FAILED_RUN_SECS, open_json_database


def database_folders(text: str) -> list[str]:
    """The comma-separated folders of `text`; exits with one line naming any folder that holds
    no database_tuning_record.json."""
    folders = [f for f in text.split(",") if f]
    missing = [f for f in folders if not (Path(f) / "database_tuning_record.json").is_file()]
    if missing or not folders:
        raise SystemExit("not a MetaSchedule database (no database_tuning_record.json): "
                         f"{', '.join(missing) or repr(text)}")
    return folders


def records_by_task(folder: str) -> dict[str, list[tuple[float, Any]]]:
    """{workload hash: [(mean run seconds, record)] of its valid records, fastest first}."""
    from core.tvm_env import structural_hash_hex

    tasks: dict[str, list[tuple[float, Any]]] = {}
    for record in open_json_database(Path(folder), create=False).get_all_tuning_records():
        secs = [float(s) for s in record.run_secs or []]
        if secs and max(secs) < MS_FAILED_RUN_SECS:
            tasks.setdefault(structural_hash_hex(record.workload.mod), []).append(
                (sum(secs) / len(secs), record))
    for records in tasks.values():
        records.sort(key=lambda pair: pair[0])
    return tasks
