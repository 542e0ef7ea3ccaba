"""What the seed holds, read from its manifests and task files alone (no store): the
datasheet's rows (docs/seed-dataset.md, `tenforge dataset info`) and whole-seed totals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from core.graphs import stored_network_name
from storage.seed import SEED_DIR, find_shards


def datasheet_rows(seed_dir: str | Path = SEED_DIR) -> list[tuple]:
    """(hardware, network, shards, tasks, measured, errors, first day, last day) per pair; a
    network's search-biased shards (flows other than collect: retunes) get their own row,
    `vgg11 (retune)`; a prepared graph's shards too, `resnet18+nhwc` (the store's name for
    it)."""
    rows: dict[tuple[str, str], list] = {}
    for path in find_shards(seed_dir):
        m = json.loads(path.read_text())
        graph = (m.get("parameters") or {}).get("graph") or "exported"
        network = ",".join(stored_network_name(n, graph) for n in m["network"] or [])
        if m.get("flow", "collect") != "collect":
            network = f"{network} ({m['flow']})"
        key = (m["hardware"]["name"], network)
        row = rows.setdefault(key, [0, 0, 0, 0, m["first_measured_at"][:10],
                                    m["last_measured_at"][:10]])
        row[0] += 1
        row[1] = max(row[1], m["tasks"])
        row[2] += m["measured"]
        row[3] += m["errors"]
        row[4] = min(row[4], m["first_measured_at"][:10])
        row[5] = max(row[5], m["last_measured_at"][:10])
    return [(*key, *vals) for key, vals in sorted(rows.items())]


def seed_totals(seed_dir: str | Path = SEED_DIR) -> dict[str, Any]:
    """Whole-seed counts: distinct tasks, networks and profiles, measurements, bytes on disk."""
    manifests = find_shards(seed_dir)
    workloads: set[str] = set()
    networks: set[str] = set()
    measured = errors = size = 0
    for path in manifests:
        m = json.loads(path.read_text())
        measured += m["measured"]
        errors += m["errors"]
        size += path.stat().st_size + sum(f["bytes"] for f in m["files"].values())
        tasks = pq.read_table(path.parent / f"{path.name[:-len('.json')]}.tasks.parquet",
                              columns=["workload_hash", "network"])
        workloads.update(tasks.column("workload_hash").to_pylist())
        networks.update(n for n in tasks.column("network").to_pylist() if n)
    return {"shards": len(manifests), "profiles": len({p.parent.name for p in manifests}),
            "networks": len(networks), "tasks": len(workloads), "measured": measured,
            "succeeded": measured - errors, "errors": errors, "bytes": size}
