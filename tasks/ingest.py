"""The ingest flow's checks (no Prefect): where shards come from, refused in one line."""

from __future__ import annotations

import os
from pathlib import Path

from core.errors import TenforgeError
from core.paths import PROJECT_ROOT

DEFAULT_INBOX = PROJECT_ROOT / "data" / "inbox"


def default_inbox() -> list[str]:
    """$TENFORGE_INBOX (folders separated by ':'), else data/inbox."""
    value = os.environ.get("TENFORGE_INBOX")
    return [p for p in value.split(os.pathsep) if p] if value else [str(DEFAULT_INBOX)]


def validate_sources(sources: list[str] | str) -> list[str]:
    if isinstance(sources, str):
        sources = [sources]
    if not sources:
        raise TenforgeError("ingest needs at least one source folder (the fleet's outboxes)")
    for source in sources:
        if not Path(source).is_dir():
            raise TenforgeError(f"ingest source {source} is not a folder; give the folders "
                                "other machines export their shards to ($TENFORGE_OUTBOX there)")
    return [str(Path(s).resolve()) for s in sources]
