"""The MetaSchedule JSON database folders a bench was given, checked before any work starts
(their valid records by task: storage.ms_database.records_by_task)."""

from __future__ import annotations

from pathlib import Path


def database_folders(text: str) -> list[str]:
    """The comma-separated folders of `text`; exits with one line naming any folder that holds
    no database_tuning_record.json."""
    folders = [f for f in text.split(",") if f]
    missing = [f for f in folders if not (Path(f) / "database_tuning_record.json").is_file()]
    if missing or not folders:
        raise SystemExit("not a MetaSchedule database (no database_tuning_record.json): "
                         f"{', '.join(missing) or repr(text)}")
    return folders
