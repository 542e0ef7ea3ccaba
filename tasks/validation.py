"""What every `validate_<flow>()` checks with: the store path, an outbox folder, positive
integers. Checking never creates anything; `prepare_db_path` (the first write) does."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from core.errors import TenforgeError
from core.paths import PROJECT_ROOT

DEFAULT_DB = PROJECT_ROOT / "data" / "tenforge.duckdb"


def default_db() -> str:
    return os.environ.get("TENFORGE_DB", str(DEFAULT_DB))


def check_db_path(db: str | Path | None) -> str:
    """The store's absolute path (None: the default), refused when it is a folder, or in a
    folder that does not exist (the default data/ folder is made on first write) or that we
    cannot write."""
    path = Path(db or default_db()).expanduser().resolve()
    if path.is_dir():
        raise TenforgeError(f"--db {path} is a folder; give a file path such as "
                            f"{path / 'tenforge.duckdb'}")
    if not path.parent.is_dir():
        if path == DEFAULT_DB.resolve():
            return str(path)
        raise TenforgeError(f"cannot create store {path}: folder {path.parent} does not exist")
    if not path.exists():  # a new store: find out now, not after a run's work, that we can
        try:
            tempfile.TemporaryFile(dir=path.parent).close()
        except OSError as exc:
            raise TenforgeError(f"store {path} cannot be written: cannot create files in "
                                f"{path.parent} ({exc.strerror}); pick a writable --db") from None
    return str(path)


def prepare_db_path(db: str | Path | None) -> Path:
    """`check_db_path`, then make the default data/ folder if it is the one missing."""
    path = Path(check_db_path(db))
    if path == DEFAULT_DB.resolve():
        path.parent.mkdir(parents=True, exist_ok=True)
    return path


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


def check_positive_ints(**values: object) -> None:
    """Refuse the first value that is not a positive integer (bools are not integers here);
    names are keyword names, shown with spaces: measure_batch -> "measure batch"."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise TenforgeError(f"{name.replace('_', ' ')} must be a positive integer, "
                                f"got {value!r}")
