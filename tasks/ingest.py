"""The ingest flow's request (no Prefect): where shards come from, refused in one line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from core.errors import TenforgeError
from core.paths import PROJECT_ROOT
from core.spec import Spec

DEFAULT_INBOX = PROJECT_ROOT / "data" / "inbox"


def default_inbox() -> list[str]:
    """$TENFORGE_INBOX (folders separated by ':'), else data/inbox."""
    value = os.environ.get("TENFORGE_INBOX")
    return [p for p in value.split(os.pathsep) if p] if value else [str(DEFAULT_INBOX)]


@dataclass(frozen=True)
class IngestSpec(Spec):
    """A validated ingest request: the source folders, resolved."""

    sources: tuple[str, ...]


def validate_ingest(db: str | None, sources: list[str] | str | None) -> IngestSpec:
    """The source folders ($TENFORGE_INBOX or data/inbox when none) must exist; the store's
    path must be usable. Shards are checksummed by the ingest task, before any write."""
    from tasks.validation import check_db_path

    sources = sources or default_inbox()
    if isinstance(sources, str):
        sources = [sources]
    if not sources:
        raise TenforgeError("ingest needs at least one source folder (the fleet's outboxes)")
    for source in sources:
        if not Path(source).is_dir():
            raise TenforgeError(f"ingest source {source} is not a folder; give the folders "
                                "other machines export their shards to ($TENFORGE_OUTBOX there)")
    return IngestSpec(db=check_db_path(db), sources=tuple(str(Path(s).resolve())
                                                          for s in sources))
