"""The schema lives in SQL: numbered migrations must reproduce storage/schema.sql exactly."""

import duckdb
import pytest

from core.errors import TenforgeError
from storage.store import SCHEMA_FILE, Store, migrations

CATALOG = {
    "tables": "SELECT table_name, column_name, data_type, is_nullable, column_default "
              "FROM information_schema.columns WHERE table_name <> 'schema_migrations' "
              "ORDER BY ALL",
    "constraints": "SELECT table_name, constraint_type, constraint_text FROM "
                   "duckdb_constraints() WHERE table_name <> 'schema_migrations' ORDER BY ALL",
    "views": "SELECT view_name, sql FROM duckdb_views() WHERE NOT internal ORDER BY ALL",
    "sequences": "SELECT sequence_name FROM duckdb_sequences() ORDER BY ALL",
}


def catalog(con):
    return {k: con.execute(q).fetchall() for k, q in CATALOG.items()}


def test_migrations_reproduce_schema_file(tmp_path):
    with Store(tmp_path / "migrated.duckdb") as store:
        migrated = catalog(store.con)
    con = duckdb.connect(str(tmp_path / "direct.duckdb"))
    con.execute(SCHEMA_FILE.read_text())
    assert migrated == catalog(con)
    assert migrated["views"] and migrated["tables"]


def test_migrations_are_numbered_without_gaps():
    versions = [v for v, _, _ in migrations()]
    assert versions == list(range(1, len(versions) + 1))


def test_reopening_applies_nothing_twice(db):
    with Store(db) as store:
        assert store.migrate() == []
        assert store.scalar("SELECT count(*) FROM schema_migrations") == len(migrations())


def test_v_measurements_has_the_documented_columns(db):
    with Store(db) as store:
        cols = [r[0] for r in store.query("SELECT column_name FROM information_schema.columns "
                                          "WHERE table_name = 'v_measurements' ORDER BY "
                                          "ordinal_position")]
    assert cols == ["hardware", "network", "task_name", "workload_hash", "candidate_id",
                    "mean_latency_s", "error_kind", "measured_at"]


def test_a_non_duckdb_file_is_refused(tmp_path):
    bogus = tmp_path / "notes.duckdb"
    bogus.write_text("these are not the tables you are looking for\n" * 100)
    with pytest.raises(TenforgeError, match="not a usable DuckDB store|cannot open store"):
        Store(bogus)


def test_a_missing_folder_is_refused(tmp_path):
    with pytest.raises(TenforgeError, match="does not exist"):
        Store(tmp_path / "no" / "such" / "store.duckdb")


def test_read_only_store_must_exist(tmp_path):
    with pytest.raises(TenforgeError, match="does not exist"):
        Store(tmp_path / "absent.duckdb", read_only=True)


def test_a_locked_store_fails_with_one_line(db):
    import subprocess
    import sys
    import time

    holder = subprocess.Popen([sys.executable, "-c", f"import duckdb, time; c = duckdb.connect("
                               f"{db!r}); print('ok', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "ok"
        start = time.monotonic()
        with pytest.raises(TenforgeError) as info:
            Store(db, lock_wait_s=1.0)
        assert time.monotonic() - start < 10
        message = str(info.value)
        assert "locked by another process" in message and "\n" not in message
        assert f"pid {holder.pid}" in message
    finally:
        holder.kill()
        holder.wait()


def test_the_store_opens_in_the_duckdb_command_line_tool(db):
    """README promise: the pinned PyPI duckdb-cli reads the file as written."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    cli = Path(sys.executable).with_name("duckdb")
    cli = str(cli) if cli.exists() else shutil.which("duckdb")
    assert cli, "duckdb-cli is a dev dependency: pip install -e '.[dev]'"
    with Store(db):
        pass
    out = subprocess.run([cli, "-readonly", "-csv", db, "SELECT count(*) AS n FROM "
                          "v_measurements"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["n", "0"]


def test_a_store_upgraded_by_a_connection_that_skips_its_checkpoint_opens_again(tmp_path):
    # DuckDB 1.5.6 cannot replay an ALTER TABLE ADD COLUMN from the write-ahead log on a
    # table with a function default (tuning_runs.created_at): "Calling DatabaseManager::
    # GetDefaultDatabase with no default database set", and the store would not open. A
    # presample upgraded its store that way mid-run (session 51); migrations checkpoint now.
    path = tmp_path / "old.duckdb"
    with Store(path):
        pass
    con = duckdb.connect(str(path))
    for column in ("held_tasks", "held_changed", "hold_s"):
        con.execute(f"ALTER TABLE tuning_runs DROP COLUMN {column}")
    con.execute("DELETE FROM schema_migrations WHERE version = 19")
    con.close()
    with Store(path, checkpoint=False) as store:
        assert store.scalar("SELECT count(*) FROM schema_migrations") == len(migrations())
    with Store(path) as store:
        assert store.scalar("SELECT count(*) FROM schema_migrations") == len(migrations())
