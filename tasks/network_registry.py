"""Users' networks registered in the store (`tenforge networks add`, or a first use of a file):
name, source kind, content hash, input signature and task list, so scheduled retunes, collects
and compiles can name them like zoo networks."""

from __future__ import annotations

import json
from typing import Any

from core.errors import TenforgeError
from storage.store import Store
from tasks.sources import Workload, registered_workload


def check_registrable(db: str, workload: Workload) -> None:
    """Refuse a name already registered to another file (the same file again is an update)."""
    if workload.is_zoo:
        return
    registered = registered_workload(db, workload.name)
    if registered is not None and registered.source != workload.source:
        raise TenforgeError(f"network name {workload.name!r} is registered to "
                            f"{registered.source}; register {workload.source} under another "
                            "name: tenforge networks add FILE --name NEW_NAME")


def describe(workload: Workload, target: dict) -> dict[str, Any]:
    """The registry row: imports the network and splits it into tasks for `target`."""
    from tasks.workloads import import_with_weights, split_into_tasks

    fused, _weights, signature = import_with_weights(workload, 1)
    tasks = split_into_tasks(fused, target)
    return {
        "name": workload.name, "kind": workload.kind, "source": workload.source,
        "content_hash": workload.content_hash,
        "input_shapes_json": json.dumps([[n, list(s)] for n, s in workload.input_shapes]),
        "inputs_json": json.dumps([{"shape": shape, "dtype": dtype}
                                   for shape, dtype in signature]),
        "tasks_json": json.dumps([{"task_name": t.task_name, "workload_hash": t.workload_hash,
                                   "flops": t.flops, "weight": t.weight} for t in tasks]),
        "target_json": json.dumps(target, sort_keys=True),
    }


def register(db: str, workload: Workload, target: dict) -> dict[str, Any]:
    """Register (or refresh) a user's network in the store; returns its row."""
    from tasks.validation import prepare_db_path

    check_registrable(db, workload)
    row = describe(workload, target)
    with Store(prepare_db_path(db)) as store:
        store.register_workload(row)
    return row


def ensure_registered(db: str, workload: Workload, target: dict) -> None:
    """Register a file used directly (retune FILE, collect FILE) unless that very content is
    registered already."""
    if workload.is_zoo:
        return
    registered = registered_workload(db, workload.name)
    if registered is None or (registered.source, registered.content_hash) != (
            workload.source, workload.content_hash):
        register(db, workload, target)
