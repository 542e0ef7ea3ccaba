"""The Store: the only code that writes the DuckDB file.

DuckDB admits one read-write process per file (a second fails at once with "Could not set
lock"), so writers open the file for short transactions and close it; a writer that finds the
file locked retries for `lock_wait_s` and then fails with a one-line error. Bulk rows go in
through Arrow tables (executemany is ~300x slower, FACTS.md).
"""

from __future__ import annotations

import json
import re
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import duckdb
import pyarrow as pa

from core.errors import TenforgeError
from core.hardware import check_same_chip
from core.signals import signals_held

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
SCHEMA_FILE = Path(__file__).resolve().parent / "schema.sql"
DEFAULT_LOCK_WAIT_S = 30.0


def migrations() -> list[tuple[int, str, Path]]:
    """(version, name, path) of every numbered migration, in order."""
    found = []
    for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
        match = re.fullmatch(r"(\d+)_(\w+)\.sql", path.name)
        if match:
            found.append((int(match.group(1)), match.group(2), path))
    return found


class Store:
    """A DuckDB file with tenforge's schema. Use as a context manager; one per transaction batch."""

    def __init__(self, path: str | Path, read_only: bool = False,
                 lock_wait_s: float = DEFAULT_LOCK_WAIT_S, checkpoint: bool = True):
        """`checkpoint=False`: closing leaves this connection's commits in the write-ahead log
        (FILE.wal, durable: the next open replays it) instead of folding them into FILE. For
        a step that writes a little and is followed by more writes of the same flow, which
        checkpoints: on a seed-sized store (~1 GB) a checkpoint after a 2-candidate insert takes
        ~1.9 s against 0.006 s (DuckDB rewrites the candidates table's indexes and row group),
        and collect sampled tasks one connection each. A default close checkpoints, so a store
        at rest is one file (copying FILE alone copies everything)."""
        self.path = Path(path)
        self.read_only = read_only
        self.checkpoint = checkpoint
        self.con = self._connect(lock_wait_s)
        if not read_only:
            self.migrate()
        elif self._pending_migrations():
            # A reader of an older store still wants today's views: upgrade it once (a brief
            # write), then read. Only the tables' owner can do that while nobody writes.
            self.con.close()
            self.read_only = False
            self.con = self._connect(lock_wait_s)
            self.migrate()
            self.con.close()
            self.read_only = True
            self.con = self._connect(lock_wait_s)

    # -------------------------------------------------------------- connection and schema

    def _connect(self, lock_wait_s: float) -> duckdb.DuckDBPyConnection:
        if self.read_only and not self.path.exists():
            raise TenforgeError(f"store {self.path} does not exist; run `tenforge collect` "
                                "(or `tenforge pipeline`) to create it, or pass another --db")
        if not self.read_only and not self.path.parent.is_dir():
            raise TenforgeError(f"cannot create store {self.path}: folder {self.path.parent} "
                                "does not exist")
        deadline = time.monotonic() + lock_wait_s
        while True:
            try:
                con = duckdb.connect(str(self.path), read_only=self.read_only)
                # DuckDB draws a progress bar on stdout for a query over 2 s, which would
                # land inside `--json` output and a flow's printed tables
                con.execute("SET enable_progress_bar = false")
                return con
            except duckdb.IOException as exc:
                message = str(exc)
                if "lock" in message.lower():
                    if time.monotonic() < deadline:
                        time.sleep(0.2)
                        continue
                    holder = re.search(r"PID (\d+)", message)
                    raise TenforgeError(
                        f"store {self.path} is locked by another process"
                        f"{' (pid ' + holder.group(1) + ')' if holder else ''} for over "
                        f"{lock_wait_s:.0f} s; DuckDB allows one writer per file: wait for it "
                        "to finish or use another --db") from None
                raise TenforgeError(f"cannot open store {self.path}: "
                                    f"{message.splitlines()[0]}") from None
            except duckdb.Error as exc:
                raise TenforgeError(f"{self.path} is not a usable DuckDB store: "
                                    f"{str(exc).splitlines()[0]}") from None

    def _pending_migrations(self) -> bool:
        try:
            applied = {v for (v,) in self.con.execute(
                "SELECT version FROM schema_migrations").fetchall()}
        except duckdb.CatalogException:
            return False  # not a tenforge store (or an empty file): leave it alone
        return any(version not in applied for version, _, _ in migrations())

    def migrate(self) -> list[int]:
        """Apply the migrations this file lacks, each in one transaction; return their versions."""
        self.con.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY "
                         "KEY, name VARCHAR NOT NULL, applied_at TIMESTAMP NOT NULL DEFAULT "
                         "current_timestamp)")
        applied = {v for (v,) in
                   self.con.execute("SELECT version FROM schema_migrations").fetchall()}
        done = []
        for version, name, path in migrations():
            if version in applied:
                continue
            with self.transaction():
                self.con.execute(path.read_text())
                self.con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                                 [version, name])
            done.append(version)
        if done:
            # fold the schema change into the file now: left in the write-ahead log (a
            # checkpoint=False connection), DuckDB 1.5.6 cannot replay an ADD COLUMN on a table
            # with a function default, and the store would not open again
            self.con.execute("CHECKPOINT")
        return done

    def close(self) -> None:
        if not self.read_only:
            # The setting belongs to the database instance, which connections of one process to
            # one file share: the connection that closes last decides.
            try:
                self.con.execute("PRAGMA enable_checkpoint_on_shutdown" if self.checkpoint
                                 else "PRAGMA disable_checkpoint_on_shutdown")
            except duckdb.Error:
                pass  # a connection that cannot run it cannot have pending writes either
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """All or nothing. A Ctrl-C or SIGTERM that arrives meanwhile is acted on once the
        transaction has committed (core/signals.py): a run stopped while it stores what it
        measured keeps it."""
        with signals_held():
            self.con.execute("BEGIN TRANSACTION")
            try:
                yield
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            self.con.execute("COMMIT")

    # -------------------------------------------------------------- generic helpers

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.con.execute(sql, list(params)).fetchall()

    def scalar(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = self.con.execute(sql, list(params)).fetchone()
        return row[0] if row else None

    def _insert_arrow(self, table: str, rows: pa.Table, on_conflict_ignore: bool = False) -> None:
        """INSERT the Arrow table's columns into `table` (same column names)."""
        cols = ", ".join(f'"{c}"' for c in rows.column_names)
        verb = "INSERT OR IGNORE" if on_conflict_ignore else "INSERT"
        self.con.register("_incoming", rows)
        try:
            self.con.execute(f"{verb} INTO {table} ({cols}) SELECT {cols} FROM _incoming")
        finally:
            self.con.unregister("_incoming")

    # -------------------------------------------------------------- hardware, networks, tasks

    def upsert_hardware(self, row: dict[str, Any]) -> int:
        """The id of hardware `row['name']`, inserting it; refuse a changed target or chip."""
        existing = self.con.execute("SELECT hardware_id, target_json, features_json FROM hardware "
                                    "WHERE name = ?", [row["name"]]).fetchone()
        if existing:
            check_same_chip(row["name"], existing[1:], (row["target_json"], row["features_json"]))
            return int(existing[0])
        cols = list(row)
        self.con.execute(f"INSERT INTO hardware ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])
        return int(self.scalar("SELECT hardware_id FROM hardware WHERE name = ?", [row["name"]]))

    def hardware_id(self, name: str) -> int:
        hid = self.scalar("SELECT hardware_id FROM hardware WHERE name = ?", [name])
        if hid is None:
            known = [n for (n,) in self.query("SELECT name FROM hardware ORDER BY name")]
            raise TenforgeError(f"hardware {name!r} is not in store {self.path}; stored: "
                                f"{', '.join(known) or 'none'}")
        return int(hid)

    def upsert_network(self, name: str, batch: int, input_size: int) -> int:
        self.con.execute("INSERT OR IGNORE INTO networks (name, batch, input_size) "
                         "VALUES (?, ?, ?)",
                         [name, batch, input_size])
        return int(self.scalar("SELECT network_id FROM networks WHERE name = ? AND batch = ? AND "
                               "input_size = ?", [name, batch, input_size]))

    def upsert_tasks(self, tasks: Sequence[Any], network_id: int | None = None) -> dict[str, int]:
        """Insert tasks (TaskInfo-like) not yet stored, link them to a network; hash -> task_id."""
        if not tasks:
            return {}
        rows = pa.table({
            "workload_hash": [t.workload_hash for t in tasks],
            "task_name": [t.task_name for t in tasks],
            "flops": pa.array([t.flops for t in tasks], pa.float64()),
            "mod_json": [t.mod_json for t in tasks],
        })
        self._insert_arrow("tasks", rows, on_conflict_ignore=True)
        hashes = [t.workload_hash for t in tasks]
        ids = dict(self.con.execute("SELECT workload_hash, task_id FROM tasks WHERE workload_hash "
                                    "IN (SELECT unnest(?))", [hashes]).fetchall())
        if network_id is not None:
            links = pa.table({
                "network_id": pa.array([network_id] * len(tasks), pa.int32()),
                "task_id": pa.array([ids[t.workload_hash] for t in tasks], pa.int32()),
                "weight": pa.array([getattr(t, "weight", 1) for t in tasks], pa.int32()),
            })
            self._insert_arrow("network_tasks", links, on_conflict_ignore=True)
        return ids

    def settings_id(self, key: str, settings: dict[str, Any]) -> int:
        self.con.execute("INSERT OR IGNORE INTO measure_settings (settings_key, settings_json) "
                         "VALUES (?, ?)", [key, json.dumps(settings, sort_keys=True)])
        return int(self.scalar("SELECT settings_id FROM measure_settings WHERE settings_key = ?",
                               [key]))

    # -------------------------------------------------------------- candidates and features

    def candidate_hashes(self, task_id: int, hardware_id: int) -> list[str]:
        return [h for h, _ in self.candidate_traces(task_id, hardware_id, traces=False)]

    def candidate_traces(self, task_id: int, hardware_id: int,
                         traces: bool = True) -> list[tuple[str, str | None]]:
        """(schedule hash, trace JSON or None) of a task's candidates on a profile, oldest first."""
        return [(h, t) for h, t in self.query(
            f"SELECT schedule_hash, {'trace_json' if traces else 'NULL'} FROM candidates "
            "WHERE task_id = ? AND hardware_id = ? ORDER BY candidate_id",
            [task_id, hardware_id])]

    def insert_candidates(self, task_id: int, hardware_id: int, candidates: Sequence[Any],
                          source: str = "sampled", extractor: str | None = None) -> int:
        """Store candidates (and their features, if `extractor`); returns how many were new."""
        if not candidates:
            return 0
        before = self.scalar("SELECT count(*) FROM candidates")
        rows = pa.table({
            "task_id": pa.array([task_id] * len(candidates), pa.int32()),
            "hardware_id": pa.array([hardware_id] * len(candidates), pa.int32()),
            "schedule_hash": [c.schedule_hash for c in candidates],
            "trace_json": [c.trace_json for c in candidates],
            "design_space": pa.array([c.design_space for c in candidates], pa.int32()),
            "sample_seed": pa.array([c.sample_seed for c in candidates], pa.int64()),
            "source": [source] * len(candidates),
        })
        self._insert_arrow("candidates", rows, on_conflict_ignore=True)
        if extractor is not None:
            ids = dict(self.con.execute(
                "SELECT schedule_hash, candidate_id FROM candidates WHERE task_id = ? AND "
                "hardware_id = ?", [task_id, hardware_id]).fetchall())
            feats = pa.table({
                "candidate_id": pa.array([ids[c.schedule_hash] for c in candidates], pa.int64()),
                "extractor": [extractor] * len(candidates),
                "dim": pa.array([c.features.shape[1] for c in candidates], pa.int32()),
                "n_stores": pa.array([c.features.shape[0] for c in candidates], pa.int32()),
                "values": pa.array([c.features.ravel() for c in candidates],
                                   pa.list_(pa.float32())),
            })
            self._insert_arrow("features", feats, on_conflict_ignore=True)
        return int(self.scalar("SELECT count(*) FROM candidates")) - int(before)

    def candidate_ids(self, task_id: int, hardware_id: int) -> dict[str, int]:
        """Schedule hash -> candidate id of a task's candidates on one profile."""
        return dict(self.con.execute(
            "SELECT schedule_hash, candidate_id FROM candidates WHERE task_id = ? AND "
            "hardware_id = ?", [task_id, hardware_id]).fetchall())

    def pending_candidates(self, hardware_id: int, settings_id: int,
                           task_ids: Sequence[int] | None = None) -> list[dict[str, Any]]:
        """Candidates of `hardware_id` with no measurement under `settings_id`, task by task."""
        sql = ("SELECT c.candidate_id, c.trace_json, t.task_id, t.workload_hash, t.flops "
               "FROM candidates c JOIN tasks t USING (task_id) "
               "WHERE c.hardware_id = ? AND NOT EXISTS (SELECT 1 FROM measurements m WHERE "
               "m.candidate_id = c.candidate_id AND m.settings_id = ?)")
        params: list[Any] = [hardware_id, settings_id]
        if task_ids is not None:
            sql += " AND c.task_id IN (SELECT unnest(?))"
            params.append(list(task_ids))
        cur = self.con.execute(sql + " ORDER BY c.task_id, c.candidate_id", params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r)) for r in cur.fetchall()]

    def task_modules(self, task_ids: Sequence[int]) -> dict[int, str]:
        return dict(self.con.execute("SELECT task_id, mod_json FROM tasks WHERE task_id IN "
                                     "(SELECT unnest(?))", [list(task_ids)]).fetchall())

    # -------------------------------------------------------------- measurements and runs

    def insert_measurements(self, settings_id: int, results: Sequence[Any], tvm_version: str,
                            flow_run_id: str | None) -> int:
        """Store MeasureResult-like rows in one statement; a row already stored is kept as is."""
        if not results:
            return 0
        before = self.scalar("SELECT count(*) FROM measurements")
        ok = [r.error_kind is None for r in results]
        rows = pa.table({
            "candidate_id": pa.array([r.candidate_id for r in results], pa.int64()),
            "settings_id": pa.array([settings_id] * len(results), pa.int32()),
            "run_secs": pa.array([list(r.run_secs) or None for r in results],
                                 pa.list_(pa.float64())),
            "mean_latency_s": pa.array([sum(r.run_secs) / len(r.run_secs) if good else None
                                        for r, good in zip(results, ok)], pa.float64()),
            "error_kind": pa.array([r.error_kind for r in results], pa.string()),
            "error_msg": pa.array([r.error_msg for r in results], pa.string()),
            "verified": pa.array([r.verified for r in results], pa.bool_()),
            "build_s": pa.array([r.build_s for r in results], pa.float64()),
            "run_wall_s": pa.array([r.run_wall_s for r in results], pa.float64()),
            "tvm_version": [tvm_version] * len(results),
            "flow_run_id": pa.array([flow_run_id] * len(results), pa.string()),
        })
        self._insert_arrow("measurements", rows, on_conflict_ignore=True)
        return int(self.scalar("SELECT count(*) FROM measurements")) - int(before)

    def start_run(self, run_id: str, flow: str, parameters: dict[str, Any], **extra: Any) -> None:
        self.con.execute(
            "INSERT OR REPLACE INTO runs (run_id, flow, parameters_json, hardware, host, "
            "tvm_version, tenforge_version, status) VALUES (?, ?, ?, ?, ?, ?, ?, 'running')",
            [run_id, flow, json.dumps(parameters, sort_keys=True, default=str),
             extra.get("hardware"), extra.get("host"), extra.get("tvm_version"),
             extra.get("tenforge_version")])

    def finish_run(self, run_id: str, status: str, summary: dict[str, Any]) -> None:
        self.con.execute("UPDATE runs SET status = ?, finished_at = current_timestamp, "
                         "summary_json = ? WHERE run_id = ?",
                         [status, json.dumps(summary, default=str), run_id])

    # -------------------------------------------------------------- search and models

    def upsert_trial(self, row: dict[str, Any]) -> None:
        """Insert or refresh one search trial (a resumed study re-reports its trials)."""
        cols = list(row)
        self.con.execute(f"INSERT OR REPLACE INTO search_trials ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])

    def has_model(self, model_id: str) -> bool:
        return bool(self.scalar("SELECT count(*) FROM models WHERE model_id = ?", [model_id]))

    def register_model(self, row: dict[str, Any]) -> None:
        cols = list(row)
        self.con.execute(f"INSERT INTO models ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])

    def register_workload(self, row: dict[str, Any]) -> None:
        """A user's network under its name (a new source or content replaces the old row)."""
        cols = list(row)
        self.con.execute(f"INSERT OR REPLACE INTO workloads ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])

    def record_evaluation(self, model_id: str, hardware: str, metrics: dict[str, Any],
                          test_tasks: int, split: dict[str, Any] | None,
                          flow_run_id: str | None) -> None:
        """A model's measured ranking accuracy on a profile's held-out tasks."""
        self.con.execute("INSERT INTO model_evaluations (model_id, hardware, metrics_json, "
                         "test_tasks, split_json, flow_run_id) VALUES (?, ?, ?, ?, ?, ?)",
                         [model_id, hardware, json.dumps(metrics, sort_keys=True), test_tasks,
                          json.dumps(split, sort_keys=True) if split else None, flow_run_id])

    def newest_pretrained(self, unseen_by: str | None = None) -> str | None:
        """The newest model a pretrain run registered (only those whose training data never
        included hardware `unseen_by`, when given)."""
        return self.scalar(
            "SELECT m.model_id FROM models m JOIN runs r ON r.run_id = m.flow_run_id "
            "WHERE r.flow = 'pretrain' AND (? IS NULL OR NOT list_contains("
            "CAST(m.data_spec_json->'$.hardware' AS VARCHAR[]), ?)) "
            "ORDER BY m.created_at DESC LIMIT 1", [unseen_by, unseen_by])

    def model_row(self, model_id: str) -> dict[str, Any]:
        cur = self.con.execute("SELECT * FROM models WHERE model_id = ?", [model_id])
        row = cur.fetchone()
        if row is None:
            known = [m for (m,) in self.query("SELECT model_id FROM models ORDER BY created_at "
                                              "DESC LIMIT 5")]
            raise TenforgeError(f"no model {model_id!r} in {self.path}; newest: "
                                f"{', '.join(known) or 'none (run `tenforge search`)'}")
        return dict(zip([d[0] for d in cur.description], row))

    # -------------------------------------------------------------- tuning

    def record_tuning(self, row: dict[str, Any], curve: Sequence[dict[str, Any]]) -> None:
        """One finished tuning run and its curve (call inside a transaction)."""
        cols = list(row)
        self.con.execute(f"INSERT INTO tuning_runs ({', '.join(cols)}) VALUES "
                         f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])
        if curve:
            self._insert_arrow("tuning_curve", pa.Table.from_pylist(
                [{"tuning_id": row["tuning_id"], "point": i, **p} for i, p in enumerate(curve)]))

    def last_tuning(self, network: str, hardware: str, batch_size: int) -> dict[str, Any] | None:
        """The newest tuning run of `network` on `hardware`, or None."""
        cur = self.con.execute("SELECT * FROM tuning_runs WHERE network = ? AND hardware = ? AND "
                               "batch_size = ? ORDER BY created_at DESC LIMIT 1",
                               [network, hardware, batch_size])
        row = cur.fetchone()
        return None if row is None else dict(zip([d[0] for d in cur.description], row))
