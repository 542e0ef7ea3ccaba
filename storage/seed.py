"""Find, check and load the seed dataset: measurements shipped in the repository as Parquet shards
(storage.seed_export writes them).

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
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from core.errors import TenforgeError
from storage.store import Store

SEED_DIR = Path(__file__).resolve().parent.parent / "dataset" / "seed"
SHARD_FORMAT = 1


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
        if file_sha256(path) != meta["sha256"]:
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


def _traces_renamed(store: Store, cands: pa.Table, tasks: pa.Table) -> pa.Table:
    """The shard's traces, their block names those of the module this store keeps for each
    task (storage/block_names.py): a task the store had from another import may name its
    blocks otherwise, and the shard's traces would not replay on the stored module. Only
    traces that look up a block named after a Relax variable can differ."""
    from storage.block_names import (
        block_renaming,
        guessed_renaming,
        module_blocks,
        rename_blocks,
        variable_lookups,
    )

    workloads = cands.column("workload_hash").to_pylist()
    traces = cands.column("trace_json").to_pylist()
    rows: dict[str, list[int]] = {}
    for i, trace in enumerate(traces):
        if variable_lookups(trace):
            rows.setdefault(workloads[i], []).append(i)
    if not rows:
        return cands
    theirs = dict(zip(tasks.column("workload_hash").to_pylist(),
                      tasks.column("mod_json").to_pylist()))
    ours = dict(store.query("SELECT workload_hash, mod_json FROM tasks WHERE workload_hash IN "
                            "(SELECT unnest(?::VARCHAR[]))", [list(rows)]))
    for workload, indices in rows.items():
        mod = ours.get(workload, theirs[workload])
        exact, blocks = block_renaming(theirs[workload], mod), module_blocks(mod)
        for i in indices:
            trace = rename_blocks(traces[i], exact)
            traces[i] = rename_blocks(trace, guessed_renaming(variable_lookups(trace), blocks))
    return cands.set_column(cands.column_names.index("trace_json"), "trace_json",
                            pa.array(traces, pa.string()))


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
    cands = _traces_renamed(store, cands, tasks)
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
