"""Export a store's runs as seed shards (the format storage.seed describes and loads).

One shard per run: `tenforge dataset export-seed` writes the repository's seed and
dataset/extra folders, and every collect writes one into its outbox for `ingest`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from storage.feature_rows import DERIVED_EXTRACTORS
from storage.seed import SEED_DIR, SHARD_FORMAT, file_sha256, loaded_seed_runs
from storage.store import Store

FLOAT16_MAX = float(np.finfo(np.float16).max)
ERROR_MSG_CHARS = 400  # enough for the first lines of a TVM error; full traces stay local
_HARDWARE_COLS = ("name", "description", "target_json", "target_kind", "arch", "host",
                  "runner_json", "num_threads", "features_json", "feature_vector")


@dataclass(frozen=True)
class ShardSummary:
    stem: str
    hardware: str
    network: str
    measured: int
    errors: int


def _command_of(flow: str, params: dict[str, Any], db_name: str) -> str:
    """The CLI command that reproduces a collect run's measurements."""
    if flow != "collect":
        return f"(flow {flow}) {json.dumps(params, sort_keys=True)}"
    parts = ["tenforge", "collect", "--hardware", params["hardware"],
             "--networks", ",".join(params["networks"]),
             "--candidates", str(params["candidates_per_task"]), "--seed", str(params["seed"]),
             "--batch-size", str(params["batch_size"])]
    if params.get("input_size"):
        parts += ["--input-size", str(params["input_size"])]
    if params.get("graph", "exported") != "exported":  # its tasks are other functions
        parts += ["--graph", params["graph"]]
    if params.get("simt"):  # a GPU's SIMT samples beside its tensor-core ones
        parts += ["--simt"]
    return shlex.join([*parts, "--db", db_name])


def exportable_runs(store: Store, include_running: bool = False) -> list[dict[str, Any]]:
    """Runs that measured something, oldest first. A run still marked `running` counts as
    finished once a later run with the same parameters started (it was killed and resumed);
    otherwise it may still be measuring, and is left out unless `include_running`."""
    cur = store.con.execute(
        "SELECT r.run_id, r.flow, r.parameters_json, r.hardware, r.host, r.tvm_version, "
        "r.tenforge_version, r.started_at, r.finished_at, r.status, count(m.measurement_id) "
        "FROM runs r JOIN measurements m ON m.flow_run_id = r.run_id "
        "WHERE r.status <> 'running' OR ? OR EXISTS (SELECT 1 FROM runs later WHERE "
        "later.parameters_json = r.parameters_json AND later.started_at > r.started_at) "
        "GROUP BY ALL ORDER BY r.started_at", [include_running])
    cols = [d[0] for d in cur.description[:-1]] + ["measured"]
    return [dict(zip(cols, row)) for row in cur.fetchall()]


def networks_of(params: dict[str, Any]) -> list[str] | None:
    """The networks a run measured: a collect names several, a retune one."""
    if params.get("networks"):
        return list(params["networks"])
    return [params["network"]] if params.get("network") else None


def _shard_stem(run: dict[str, Any]) -> str:
    """`<start>-<networks>-<run id>`; other flows than collect say so (`<start>-retune-...`):
    their measurements are another kind of data (a search's, near each task's optimum)."""
    params = json.loads(run["parameters_json"])
    name = "+".join(networks_of(params) or [])
    if run["flow"] != "collect":
        name = f"{run['flow']}-{name}" if name else run["flow"]
    return f"{run['started_at']:%Y%m%dT%H%M%S}-{name}-{run['run_id'][:8]}"


def _candidate_table(store: Store, run_id: str) -> pa.Table:
    cur = store.con.execute(
        "SELECT t.workload_hash, c.schedule_hash, c.trace_json, c.design_space, c.sample_seed, "
        "c.source, s.settings_key, f.extractor, f.dim, f.n_stores, f.\"values\", m.run_secs, "
        "m.error_kind, m.error_msg, m.verified, m.build_s, m.run_wall_s, m.tvm_version, "
        "m.measured_at "
        "FROM measurements m JOIN candidates c USING (candidate_id) "
        "JOIN tasks t USING (task_id) JOIN measure_settings s USING (settings_id) "
        "LEFT JOIN features f ON f.candidate_id = c.candidate_id AND f.extractor NOT IN "
        "(SELECT unnest(?::VARCHAR[])) "
        "WHERE m.flow_run_id = ? ORDER BY t.workload_hash, c.schedule_hash",
        [list(DERIVED_EXTRACTORS), run_id])
    table = cur.to_arrow_table()
    if table.num_rows == 0:
        return table
    # Features: float32 lists -> one float16 blob per row (halves the bytes; a 164-d per-store
    # feature is log-scaled, so float16's 3 significant digits keep its ranking information).
    values = table.column("values").combine_chunks()
    blobs = []
    for i in range(table.num_rows):
        row = values[i].values
        if row is None or not values[i].is_valid:
            blobs.append(None)
            continue
        arr = np.clip(row.to_numpy(zero_copy_only=False), -FLOAT16_MAX, FLOAT16_MAX)
        blobs.append(arr.astype("<f2").tobytes())
    table = table.set_column(table.column_names.index("values"), "features_f16",
                             pa.array(blobs, pa.binary()))
    run_secs = pa.array([None if v is None else [float(x) for x in v]
                         for v in table.column("run_secs").to_pylist()], pa.list_(pa.float32()))
    table = table.set_column(table.column_names.index("run_secs"), "run_secs", run_secs)
    msgs = [None if m is None else m[:ERROR_MSG_CHARS]
            for m in table.column("error_msg").to_pylist()]
    return table.set_column(table.column_names.index("error_msg"), "error_msg",
                            pa.array(msgs, pa.string()))


def _task_table(store: Store, run_id: str) -> pa.Table:
    return store.con.execute(
        "SELECT DISTINCT t.workload_hash, t.task_name, t.flops, t.mod_json, n.name AS network, "
        "n.batch, n.input_size, nt.weight "
        "FROM tasks t LEFT JOIN network_tasks nt USING (task_id) "
        "LEFT JOIN networks n USING (network_id) "
        "WHERE t.task_id IN (SELECT c.task_id FROM measurements m JOIN candidates c "
        "USING (candidate_id) WHERE m.flow_run_id = ?) ORDER BY 1, 5", [run_id]
    ).to_arrow_table()


# zstd levels. The seed ships inside the repository, where each byte counts: level 19 writes
# its 40 shards in 6.35 MiB and 24 s. An outbox shard is written after every collect and read
# once by an ingest: level 9 writes the same in 7.02 MiB (+10%) and 1.4 s (measured on the
# seed's candidate tables, Zen 3).
SEED_COMPRESSION = 19
OUTBOX_COMPRESSION = 9


def shard_loaded_runs(store: Store) -> dict[str, int]:
    """Run id -> the most measurements a shard of that run held, for every run this store
    loaded from a shard (`dataset load-seed` or `ingest`): those runs are shards already. Both
    sources, because load_shard's run row keeps the first shard's count (INSERT OR IGNORE),
    while `ingested_shards` has a row for each shard, a later and longer re-export too."""
    loaded: dict[str, int] = {}
    ingested = store.query("SELECT run_id, measured FROM ingested_shards")
    for run, measured in [*loaded_seed_runs(store), *ingested]:
        loaded[run] = max(loaded.get(run, 0), int(measured))
    return loaded


def export_shards(db: str | Path, out_dir: str | Path = SEED_DIR,
                  include_running: bool = False, run_ids: list[str] | None = None,
                  compression_level: int = SEED_COMPRESSION,
                  new_only: bool = False) -> list[ShardSummary]:
    """Write a shard for every run in `db` (or only `run_ids`) that has none yet under
    `out_dir` (or whose run has measured more since); return the shards written. `new_only`:
    skip the runs the store loaded from a shard and that measured nothing more here (a store
    that began as a copy of one holding the seed and dataset/extra would otherwise write all of
    those again into a new folder: 257 old shards beside 14 new, session 63)."""
    out_dir = Path(out_dir)
    written: list[ShardSummary] = []
    with Store(db, read_only=True) as store:
        loaded = shard_loaded_runs(store) if new_only else {}
        for run in exportable_runs(store, include_running):
            if run_ids is not None and run["run_id"] not in run_ids:
                continue
            if run["measured"] <= loaded.get(run["run_id"], -1):
                continue  # a shard somewhere holds all of it
            params = json.loads(run["parameters_json"])
            folder = out_dir / (run["hardware"] or "unknown")
            stem = _shard_stem(run)
            manifest_path = folder / f"{stem}.json"
            if manifest_path.exists() and \
                    json.loads(manifest_path.read_text())["measured"] == run["measured"]:
                continue  # unchanged; a shard of a run that went on measuring is rewritten
            folder.mkdir(parents=True, exist_ok=True)
            cands = _candidate_table(store, run["run_id"])
            tasks = _task_table(store, run["run_id"])
            hw = store.con.execute(f"SELECT {', '.join(_HARDWARE_COLS)} FROM hardware WHERE "
                                   "name = ?", [run["hardware"]]).fetchone()
            settings = {k: json.loads(v) for k, v in store.query(
                "SELECT DISTINCT s.settings_key, s.settings_json FROM measurements m JOIN "
                "measure_settings s USING (settings_id) WHERE m.flow_run_id = ?",
                [run["run_id"]])}
            errors = sum(e is not None for e in cands.column("error_kind").to_pylist())
            data_path, tasks_path = folder / f"{stem}.parquet", folder / f"{stem}.tasks.parquet"
            for table, path in ((cands, data_path), (tasks, tasks_path)):
                pq.write_table(table, path, compression="zstd",
                               compression_level=compression_level)
            times = cands.column("measured_at").to_pylist()
            manifest = {
                "format": SHARD_FORMAT,
                "hardware": dict(zip(_HARDWARE_COLS, hw)),
                "network": networks_of(params),
                "batch_size": params.get("batch_size"),
                "command": _command_of(run["flow"], params, Path(db).name),
                "flow": run["flow"], "parameters": params, "run_id": run["run_id"],
                "run_status": run["status"], "host": run["host"],
                "tvm_version": run["tvm_version"], "tenforge_version": run["tenforge_version"],
                "measure_settings": settings,
                "started_at": str(run["started_at"]), "finished_at": str(run["finished_at"]),
                "first_measured_at": str(min(times)), "last_measured_at": str(max(times)),
                "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                "tasks": len(set(tasks.column("workload_hash").to_pylist())),
                "measured": cands.num_rows, "errors": errors,
                "files": {p.name: {"bytes": p.stat().st_size, "sha256": file_sha256(p)}
                          for p in (data_path, tasks_path)},
            }
            (folder / f"{stem}.json").write_text(json.dumps(manifest, indent=1, default=str)
                                                 + "\n")
            written.append(ShardSummary(stem, run["hardware"],
                                        ",".join(networks_of(params) or []), cands.num_rows,
                                        errors))
    return written
