"""Ingest: the fleet's measurements, brought into one central store without sharing a file.

DuckDB's lock is a local file lock, so two hosts must never write one store over a network
folder (FACTS.md). Instead every machine's worker writes its own store and exports a shard per
collect run (the seed format, storage/seed.py) into an outbox; the outboxes reach the central
machine by any file copy (a shared folder is fine here: shards are written once and never
changed), and `ingest` loads what it has not loaded yet:

- checksummed: every file of every new shard is checked before anything is written, so a
  damaged shard is refused with nothing written;
- idempotent: rows are keyed by content, and `ingested_shards` remembers each shard by its
  manifest's checksum, so a shard seen twice (or found in two folders) loads once;
- resumable: each shard loads in one transaction together with its `ingested_shards` row, so a
  killed ingest leaves whole shards only, and the next run goes on with the rest.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import Any, Callable

from core.errors import TenforgeError
from storage.seed import defer_checkpoints, load_shard, read_shard
from storage.store import Store


def find_manifests(sources: list[str | Path]) -> list[tuple[Path, Path]]:
    """(source folder, manifest) of every shard under the folders, in a stable order."""
    found = []
    for source in sources:
        folder = Path(source)
        if not folder.is_dir():
            raise TenforgeError(f"ingest source {folder} is not a folder; give the folders "
                                "other machines export their shards to (their outboxes)")
        found += [(folder, m) for m in sorted(folder.rglob("*.json"))]
    return found


def manifest_digest(manifest: Path) -> str:
    return hashlib.sha256(manifest.read_bytes()).hexdigest()


def new_shards(db: str | Path, manifests: list[tuple[Path, Path]]) -> dict[str, tuple[Path, Path]]:
    """The shards `db` has not ingested, by manifest checksum (the same shard found in two
    folders counts once)."""
    seen: set[str] = set()
    if Path(db).exists():
        with Store(db, read_only=True) as store:
            seen = {d for (d,) in store.query("SELECT manifest_sha256 FROM ingested_shards")}
    new: dict[str, tuple[Path, Path]] = {}
    for source, manifest in manifests:
        digest = manifest_digest(manifest)
        if digest not in seen:
            new.setdefault(digest, (source, manifest))
    return new


def check_new_shards(db: str | Path, sources: list[str | Path]) -> int:
    """Verify every new shard's format and checksums without writing anything (the CLI's check
    before it starts the flow); returns how many there are."""
    new = new_shards(db, find_manifests(sources))
    for _, manifest in new.values():
        read_shard(manifest)
    return len(new)


def ingest_shards(db: str | Path, sources: list[str | Path],
                  progress: Callable[[str], None] = print) -> dict[str, Any]:
    """Load every shard under `sources` that `db` has not ingested yet."""
    start = time.perf_counter()
    manifests = find_manifests(sources)
    new = new_shards(db, manifests)
    # Every checksum before any write: a damaged shard refuses the whole ingest.
    shards = {digest: read_shard(manifest) for digest, (_, manifest) in new.items()}
    added = 0
    with Store(db) as store:
        defer_checkpoints(store)
        for number, (digest, (source, manifest)) in enumerate(new.items(), 1):
            meta, cands, tasks = shards[digest]
            with store.transaction():
                rows = load_shard(store, meta, cands, tasks)
                store.con.execute(
                    "INSERT INTO ingested_shards (manifest_sha256, shard, source, run_id, "
                    "hardware, host, measured, measurements_added) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [digest, f"{manifest.parent.name}/{manifest.stem}", str(source),
                     meta["run_id"], meta["hardware"]["name"], meta.get("host"),
                     meta["measured"], rows])
            added += rows
            progress(f"ingested {number}/{len(new)} {manifest.parent.name}/{manifest.stem}: "
                     f"{rows} new measurements of {meta['measured']}")
    return {"db": str(db), "shards_found": len(manifests), "shards_new": len(new),
            "measurements_added": added, "seconds": round(time.perf_counter() - start, 1)}
