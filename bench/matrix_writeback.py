"""The tuning matrix's measured candidates into a store, as search-biased training data.

Each finished cell of bench/tuning_matrix.py leaves its MetaSchedule database (about 1,000
candidates a search cell, built and run with the profile's protocol) under WORK/databases/.
This stores them like a retune's write-back (tasks/tuning/writeback.py): candidates of source
'tuning', measured under the profile's settings, with one `runs` row per cell (flow 'retune',
the cell's settings and model lineage) as their provenance. `tenforge dataset export-seed`
then turns them into seed shards (issue 19: near-optimal programs beside the random samples).
A cell already written back is skipped, so this can run after every session of the matrix.
Write into a store that holds the seed (`tenforge dataset load-seed`): a candidate the seed
already measured then keeps its seed row, as in a retune's write-back, and the exported shards
load with exactly the measurements their manifests count (into an empty store, 28 of a
mobilenet_v2 cell's candidates duplicated seed rows and the shard did not round-trip).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

WRITEBACK_BENCH = "bench/tuning_matrix.py"


def cell_run_id(cell: dict[str, Any]) -> str:
    """One UUID per cell and start (a rerun cell is a new run), shaped like a flow run's id:
    seed shards are named by its first characters."""
    key = (f"tenforge/tuning-matrix/{cell['hardware']}/{cell['network']}/{cell['variant']}/"
           f"s{cell['seed']}/{cell['provenance']['started']}")
    return str(uuid.uuid5(uuid.NAMESPACE_URL, key))


def cell_parameters(cell: dict[str, Any]) -> dict[str, Any]:
    """What the cell ran with: the retune's parameters, plus the bench and model lineage."""
    model = cell.get("model") or {}
    return {"network": cell["network"], "hardware": cell["hardware"], "batch_size": 1,
            "trials": cell["trials_budget"], "minutes": cell["minutes"],
            "cost_model": model.get("model_id", "metaschedule-xgb"),
            "scheduler": "instant" if cell["variant"].startswith("instant") else "gradient",
            "warm_start": cell.get("warm_start"), "warm_focus": cell.get("warm_focus"),
            "graph": cell.get("graph", "exported"),
            "trials_per_round": cell.get("trials_per_round"),
            "warm_samples": cell.get("warm_samples"), "genetic_iters": cell.get("genetic_iters"),
            "flops_share": 1.0, "seed": cell["seed"], "bench": WRITEBACK_BENCH,
            "variant": cell["variant"], "commit": cell["provenance"]["commit"]}


def write_back_cells(out: str | Path, work: str | Path, db: str,
                     report=print) -> list[dict[str, Any]]:
    """Store every finished cell's tuning database into `db` (made if missing); returns one
    summary per cell written now."""
    from core.paths import tenforge_version
    from core.tvm_env import tvm_version
    from storage.store import Store
    from tasks.collect import network_task_ids
    from tasks.hardware import resolve_profile, this_host
    from tasks.tuning.writeback import store_tuning_measurements

    written = []
    for path in sorted((Path(out) / "cells").glob("*.json")):
        cell = json.loads(path.read_text())
        run_id = cell_run_id(cell)
        database = Path(work) / "databases" / path.stem
        if not (database / "database_tuning_record.json").exists():
            report(f"{path.stem}: no tuning database under {database}: skipped")
            continue
        with Store(db) as store:
            if store.scalar("SELECT count(*) FROM runs WHERE run_id = ?", [run_id]):
                continue
        profile = resolve_profile(cell["hardware"])
        task_ids = network_task_ids(db, profile, cell["network"], batch_size=1,
                                    graph=cell.get("graph", "exported"))
        with Store(db) as store:
            store.start_run(run_id, "retune", cell_parameters(cell), hardware=profile.name,
                            host=this_host(), tvm_version=tvm_version(),
                            tenforge_version=tenforge_version())
        added = store_tuning_measurements(db, profile, task_ids, database, run_id)
        summary = {**added, "cell": path.name, "tuned_ms": cell["tuned_ms"],
                   "trials": cell["trials"]}
        with Store(db) as store:
            store.finish_run(run_id, "completed", summary)
        report(f"{path.stem}: {added['measurements']} measurements ({added['candidates']} new "
               f"candidates) of {added['records']} records")
        written.append(summary)
    return written
