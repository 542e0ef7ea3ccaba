"""The table docs/seed-dataset.md gives for a collection: one row per shard of a folder, with how
many of its tasks no other shard had measured, on its profile and on any profile.

    .venv/bin/python bench/shard_table.py dataset/extra/rocketlake-20261129-s58 [--markdown]
        [--against dataset/seed,dataset/extra,dataset/device]

Reads only the shards' manifests (<shard>.json) and task lists (<shard>.tasks.parquet); no store.
A task is "new" when no shard under --against, outside FOLDER, lists its workload hash (tasks
are keyed by content, so one hash is one task on every profile). Rates are a shard's
measurements over the minutes between its first and last measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.ingest import find_manifests  # noqa: E402
from storage.reports import format_table, markdown_table  # noqa: E402

DATASET = Path(__file__).resolve().parents[1] / "dataset"
AGAINST = ",".join(str(DATASET / name) for name in ("seed", "extra", "device"))
HEADER = ["shard", "network@size:batch", "tasks", "new to the profile", "new to every profile",
          "measurements", "errors", "candidates/min"]


def shard_tasks(manifest: Path) -> set[str]:
    """The workload hashes a shard measured (its task list beside the manifest)."""
    tasks = manifest.with_name(manifest.name.removesuffix(".json") + ".tasks.parquet")
    return set(pq.read_table(tasks, columns=["workload_hash"]).column(0).to_pylist())


def known_tasks(sources: list[Path], folder: Path) -> tuple[set[str], dict[str, set[str]]]:
    """Every workload hash the shards under `sources` measured, outside `folder`: over all
    profiles, and per profile."""
    inside = folder.resolve()
    anywhere: set[str] = set()
    by_profile: dict[str, set[str]] = {}
    for source in sources:
        if not source.is_dir():
            continue  # a checkout without dataset/device, say
        for _, manifest in find_manifests([source]):
            if manifest.resolve().is_relative_to(inside):
                continue
            profile = json.loads(manifest.read_text())["hardware"]["name"]
            hashes = shard_tasks(manifest)
            anywhere |= hashes
            by_profile.setdefault(profile, set()).update(hashes)
    return anywhere, by_profile


def rate_per_min(meta: dict) -> float | None:
    """Measurements a minute between the shard's first and last measurement (None: unknown)."""
    try:
        first, last = (datetime.fromisoformat(meta[key])
                       for key in ("first_measured_at", "last_measured_at"))
    except (KeyError, TypeError, ValueError):
        return None
    minutes = (last - first).total_seconds() / 60
    return meta["measured"] / minutes if minutes > 0 else None


def shape_of(meta: dict) -> str:
    params = meta.get("parameters", {})
    networks = "+".join(meta.get("network") or params.get("networks") or ["?"])
    graph = params.get("graph", "exported")
    name = networks if graph == "exported" else f"{networks}+{graph}"
    size = params.get("input_size")
    return f"{name}@{size if size else 'default'}:{meta.get('batch_size', 1)}"


def table_rows(folder: Path, anywhere: set[str], by_profile: dict[str, set[str]]) -> list[tuple]:
    """One row per shard in `folder`, and a last row of distinct totals."""
    rows = []
    all_tasks: set[str] = set()
    new_any: set[str] = set()
    measured = errors = 0
    for _, manifest in find_manifests([folder]):
        meta = json.loads(manifest.read_text())
        hashes = shard_tasks(manifest)
        own = by_profile.get(meta["hardware"]["name"], set())
        rate = rate_per_min(meta)
        rows.append((manifest.name.removesuffix(".json"), shape_of(meta), len(hashes),
                     len(hashes - own), len(hashes - anywhere), meta["measured"],
                     meta["errors"], None if rate is None else round(rate)))
        all_tasks |= hashes
        new_any |= hashes - anywhere
        measured += meta["measured"]
        errors += meta["errors"]
    if not rows:
        raise SystemExit(f"shard_table: no shards in {folder} (<shard>.json with its parquet "
                         "files, as dataset/extra/ holds)")
    rows.append(("all (distinct tasks)", "", len(all_tasks), None, len(new_any), measured,
                 errors, None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="a folder of shards, e.g. dataset/extra/SET")
    parser.add_argument("--against", default=AGAINST,
                        help="comma-separated shard folders a task must be missing from to be "
                             "new (default: the repository's seed, extra and device)")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args()
    if not args.folder.is_dir():
        raise SystemExit(f"shard_table: {args.folder} is not a folder; give a folder of shards, "
                         "e.g. dataset/extra/rocketlake-20261129-s57")
    anywhere, by_profile = known_tasks([Path(p) for p in args.against.split(",") if p],
                                       args.folder)
    rows = table_rows(args.folder, anywhere, by_profile)
    print((markdown_table if args.markdown else format_table)(HEADER, rows))


if __name__ == "__main__":
    main()
