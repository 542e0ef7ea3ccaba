"""What the cost-model benches share: the store they read (the one given, else the seed dataset
loaded into a temporary store) and the profiles they use (those given, else every profile with
measurements)."""

from __future__ import annotations

import tempfile
from pathlib import Path


def store_or_seed(db: str | None, prefix: str) -> str:
    """`db`, or a fresh temporary store holding the seed dataset."""
    from storage.seed import load_shards

    if db is not None:
        return db
    seeded = str(Path(tempfile.mkdtemp(prefix=f"tenforge-{prefix}-")) / "seed.duckdb")
    load_shards(seeded, progress=lambda _: None)
    return seeded


def profiles(db: str, hardware: str | None) -> tuple[str, ...]:
    """The comma-separated `hardware`, or every profile of `db` with measurements."""
    from tasks.training import default_hardware

    return tuple(hardware.split(",")) if hardware else tuple(default_hardware(db))
