"""Export and load the seed dataset: measurements shipped in the repository as Parquet shards.

One shard = one collect run (one hardware profile, one network, one command), so a shard never
changes once written and its provenance is exactly that run's. A shard is three files in
`dataset/seed/<profile>/`:

  <stem>.json               provenance: hardware row, measurement settings, TVM version, the
                            command and its parameters, dates, counts, file checksums
  <stem>.tasks.parquet      the tasks the shard measures (TIR module JSON, FLOPs) and the
                            network memberships (network, batch, input size, weight)
  <stem>.parquet            one row per measured candidate: trace JSON, per-store features as
                            float16 (little-endian, n_stores x dim, row-major), every repeat's
                            seconds, error kind and message, build and run time, dates

Files are zstd-compressed. Loading re-keys everything by content (workload hash, schedule hash,
settings key), so shards load in any order, twice, or into a store that already has data; each
shard goes in one transaction (a bad shard leaves the store as it was).
"""

from __future__ import annotations

import hashlib
import json
import shlex
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.errors import TenforgeError
from storage.store import Store

SEED_DIR = Path(__file__).resolve().parent.parent / "dataset" / "seed"
SHARD_FORMAT = 1
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


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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


# ----------------------------------------------------------------------------------- export


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
        "LEFT JOIN features f ON f.candidate_id = c.candidate_id "
        "WHERE m.flow_run_id = ? ORDER BY t.workload_hash, c.schedule_hash", [run_id])
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
                "files": {p.name: {"bytes": p.stat().st_size, "sha256": _sha256(p)}
                          for p in (data_path, tasks_path)},
            }
            (folder / f"{stem}.json").write_text(json.dumps(manifest, indent=1, default=str)
                                                 + "\n")
            written.append(ShardSummary(stem, run["hardware"],
                                        ",".join(networks_of(params) or []), cands.num_rows,
                                        errors))
    return written


# ------------------------------------------------------------------------------------- load


def find_shards(seed_dir: str | Path = SEED_DIR) -> list[Path]:
    """The manifests of every shard under `seed_dir`, in a stable order."""
    seed_dir = Path(seed_dir)
    if not seed_dir.is_dir():
        raise TenforgeError(f"no seed dataset at {seed_dir}: expected a folder of "
                            "<profile>/<shard>.json shards (see docs/seed-dataset.md)")
    manifests = sorted(seed_dir.glob("*/*.json"))
    if not manifests:
        raise TenforgeError(f"{seed_dir} holds no shards (<profile>/<shard>.json)")
    return manifests


def read_shard(manifest_path: Path) -> tuple[dict[str, Any], pa.Table, pa.Table]:
    try:
        manifest = json.loads(manifest_path.read_text())
    except json.JSONDecodeError as exc:
        raise TenforgeError(f"{manifest_path}: not valid JSON ({exc.msg})") from None
    if not isinstance(manifest, dict) or "files" not in manifest:
        raise TenforgeError(f"{manifest_path}: not a shard manifest (no 'files'); a shard is "
                            "<stem>.json + <stem>.parquet + <stem>.tasks.parquet")
    if manifest.get("format") != SHARD_FORMAT:
        newer = isinstance(manifest.get("format"), int) and manifest["format"] > SHARD_FORMAT
        raise TenforgeError(f"{manifest_path}: shard format {manifest.get('format')!r}, but this "
                            f"tenforge reads format {SHARD_FORMAT}"
                            + ("; upgrade tenforge here to load it" if newer else ""))
    for name, meta in manifest["files"].items():
        path = manifest_path.parent / name
        if not path.exists():
            raise TenforgeError(f"{manifest_path}: its file {name} is missing")
        if _sha256(path) != meta["sha256"]:
            raise TenforgeError(f"{path}: checksum differs from {manifest_path.name} (file "
                                "damaged or edited); restore it with git checkout")
    stem = manifest_path.name[:-len(".json")]
    cands = pq.read_table(manifest_path.parent / f"{stem}.parquet")
    tasks = pq.read_table(manifest_path.parent / f"{stem}.tasks.parquet")
    return manifest, cands, tasks


def _features_arrow(blobs: pa.ChunkedArray) -> pa.Array:
    """float16 blobs -> list<float32> (null blob -> null list), without a Python loop per value."""
    pieces = blobs.to_pylist()
    sizes = np.array([0 if b is None else len(b) // 2 for b in pieces], dtype=np.int64)
    flat = np.frombuffer(b"".join(b for b in pieces if b is not None), dtype="<f2")
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    mask = pa.array([b is None for b in pieces])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(flat.astype(np.float32)),
                                    mask=mask)


def load_shard(store: Store, manifest: dict[str, Any], cands: pa.Table, tasks: pa.Table) -> int:
    """Insert one shard (inside the caller's transaction); return measurements added."""
    con = store.con
    hw = dict(manifest["hardware"])
    hardware_id = store.upsert_hardware(hw)
    settings_ids = {key: store.settings_id(key, value)
                    for key, value in manifest["measure_settings"].items()}
    # Tasks and network memberships.
    con.register("_tasks", tasks)
    try:
        con.execute("INSERT OR IGNORE INTO tasks (workload_hash, task_name, flops, mod_json) "
                    "SELECT DISTINCT workload_hash, task_name, flops, mod_json FROM _tasks")
        con.execute("INSERT OR IGNORE INTO networks (name, batch, input_size) SELECT DISTINCT "
                    "network, batch, input_size FROM _tasks WHERE network IS NOT NULL")
        con.execute("INSERT OR IGNORE INTO network_tasks (network_id, task_id, weight) "
                    "SELECT n.network_id, t.task_id, x.weight FROM _tasks x "
                    "JOIN tasks t USING (workload_hash) JOIN networks n ON n.name = x.network "
                    "AND n.batch = x.batch AND n.input_size = x.input_size")
    finally:
        con.unregister("_tasks")
    # Candidates, features, measurements: keyed by content, mapped to this store's ids.
    incoming = cands.append_column("values", _features_arrow(cands.column("features_f16")))
    incoming = incoming.drop_columns(["features_f16"])
    keys = pa.table({"settings_key": list(settings_ids),
                     "settings_id": pa.array(list(settings_ids.values()), pa.int32())})
    con.register("_c", incoming)
    con.register("_s", keys)
    try:
        # New rows only, by anti-join and a plain INSERT: DuckDB's INSERT OR IGNORE probes
        # every row through its conflict path, ~20x slower (0.93 s against 0.05 s for a
        # 1,360-row shard into a 47k-candidate store; loading the 81-shard seed: 67 s).
        con.execute(
            "INSERT INTO candidates (task_id, hardware_id, schedule_hash, trace_json, "
            "design_space, sample_seed, source) SELECT DISTINCT ON (t.task_id, c.schedule_hash) "
            "t.task_id, $hw, c.schedule_hash, c.trace_json, c.design_space, c.sample_seed, "
            "c.source FROM _c c JOIN tasks t USING (workload_hash) WHERE NOT EXISTS (SELECT 1 "
            "FROM candidates x WHERE x.hardware_id = $hw AND x.task_id = t.task_id "
            "AND x.schedule_hash = c.schedule_hash)", {"hw": hardware_id})
        con.execute("CREATE OR REPLACE TEMP TABLE _ids AS SELECT c.candidate_id, "
                    "t.workload_hash, c.schedule_hash FROM candidates c JOIN tasks t "
                    "USING (task_id) WHERE c.hardware_id = ?", [hardware_id])
        con.execute(
            "INSERT INTO features (candidate_id, extractor, dim, n_stores, \"values\") "
            "SELECT DISTINCT ON (i.candidate_id, c.extractor) i.candidate_id, c.extractor, "
            "c.dim, c.n_stores, c.\"values\" FROM _c c JOIN _ids i USING (workload_hash, "
            "schedule_hash) WHERE c.extractor IS NOT NULL AND NOT EXISTS (SELECT 1 FROM "
            "features f WHERE f.candidate_id = i.candidate_id AND f.extractor = c.extractor)")
        before = store.scalar("SELECT count(*) FROM measurements")
        con.execute(
            "INSERT INTO measurements (candidate_id, settings_id, run_secs, "
            "mean_latency_s, error_kind, error_msg, verified, build_s, run_wall_s, tvm_version, "
            "flow_run_id, measured_at) "
            "SELECT DISTINCT ON (i.candidate_id, s.settings_id) i.candidate_id, s.settings_id, "
            "c.run_secs::DOUBLE[], "
            "CASE WHEN c.error_kind IS NULL THEN list_avg(c.run_secs::DOUBLE[]) END, "
            "c.error_kind, c.error_msg, c.verified, c.build_s, c.run_wall_s, c.tvm_version, ?, "
            "c.measured_at FROM _c c JOIN _ids i USING (workload_hash, schedule_hash) "
            "JOIN _s s USING (settings_key) WHERE NOT EXISTS (SELECT 1 FROM measurements m "
            "WHERE m.candidate_id = i.candidate_id AND m.settings_id = s.settings_id)",
            [manifest["run_id"]])
        added = int(store.scalar("SELECT count(*) FROM measurements")) - int(before)
        con.execute("DROP TABLE _ids")
    finally:
        con.unregister("_c")
        con.unregister("_s")
    # The run itself, so `runs` says where these rows came from.
    con.execute(
        "INSERT OR IGNORE INTO runs (run_id, flow, parameters_json, hardware, host, tvm_version, "
        "tenforge_version, started_at, finished_at, status, summary_json) VALUES "
        "(?, ?, ?, ?, ?, ?, ?, ?::TIMESTAMP, TRY_CAST(? AS TIMESTAMP), ?, ?)",
        [manifest["run_id"], manifest["flow"], json.dumps(manifest["parameters"], sort_keys=True),
         hw["name"], manifest["host"], manifest["tvm_version"], manifest["tenforge_version"],
         manifest["started_at"], manifest["finished_at"], manifest["run_status"],
         json.dumps({"loaded_from_seed_shard": manifest["run_id"],
                     "command": manifest["command"], "measured": manifest["measured"]})])
    return added


BULK_CHECKPOINT_THRESHOLD = "1GB"  # WAL size before DuckDB checkpoints, while loading shards


def defer_checkpoints(store: Store) -> None:
    """Checkpoint once at close, not at every shard's commit: DuckDB checkpoints whenever its
    WAL passes 16 MB, and each one rewrote the growing tables (loading the 40-shard seed: 24.7 s
    -> 13.8 s on this 2-vCPU VM). Each shard still commits on its own, so a killed load keeps
    the shards it finished."""
    store.con.execute(f"SET checkpoint_threshold = '{BULK_CHECKPOINT_THRESHOLD}'")


def load_shards(db: str | Path, seed_dir: str | Path = SEED_DIR,
                hardware: list[str] | None = None, progress: Any = print) -> dict[str, Any]:
    """Load every shard under `seed_dir` (optionally only some profiles) into store `db`."""
    manifests = find_shards(seed_dir)
    if hardware:
        known = sorted({m.parent.name for m in manifests})
        unknown = [h for h in hardware if h not in known]
        if unknown:
            raise TenforgeError(f"no seed shards for hardware {', '.join(unknown)}; the seed "
                                f"has: {', '.join(known)}")
        manifests = [m for m in manifests if m.parent.name in hardware]
    start = time.perf_counter()
    shards = [read_shard(path) for path in manifests]  # every checksum before any write
    added = skipped = 0
    with Store(db) as store:
        defer_checkpoints(store)
        loaded = loaded_seed_runs(store)
        for number, (path, (manifest, cands, tasks)) in enumerate(zip(manifests, shards), 1):
            where = f"seed shard {number}/{len(manifests)} {path.parent.name}/{path.stem}"
            # its run row commits with its rows; a re-export of a run that measured more since
            # (a shard of a running collection) counts more and loads again
            if (manifest["run_id"], manifest["measured"]) in loaded:
                skipped += 1
                progress(f"{where}: loaded before")
                continue
            with store.transaction():
                added += load_shard(store, manifest, cands, tasks)
            progress(f"{where}: {cands.num_rows} rows ({time.perf_counter() - start:.1f} s)")
    return {"db": str(db), "shards": len(manifests), "loaded_before": skipped,
            "measurements_added": added, "seconds": round(time.perf_counter() - start, 1)}


def loaded_seed_runs(store: Store) -> set[tuple[str, int]]:
    """(run id, measured) of each shard this store loaded: its `runs` row names the shard."""
    return {(run, int(measured)) for run, measured in store.query(
        "SELECT json_extract_string(summary_json, '$.loaded_from_seed_shard'), "
        "json_extract(summary_json, '$.measured') FROM runs "
        "WHERE summary_json LIKE '%loaded_from_seed_shard%'")}
