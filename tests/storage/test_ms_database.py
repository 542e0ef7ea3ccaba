"""MetaSchedule JSON databases: a database written by TVM's own tune_tir round-trips exactly."""

import subprocess
import sys

import pytest

from core.errors import TenforgeError
from storage.ms_database import export_ms, import_ms, records_summary
from tasks.hardware import resolve_profile
from tests.conftest import ROOT, run_cli


@pytest.fixture(scope="module")
def tuned_dir(tmp_path_factory):
    """A database written by tvm's tune_tir (in its own process: it imports every intrinsic)."""
    work = tmp_path_factory.mktemp("tune_tir")
    subprocess.run([sys.executable, str(ROOT / "tests/storage/make_ms_database.py"), str(work),
                    "8"], check=True, capture_output=True, timeout=900)
    return work


@pytest.mark.slow
def test_tune_tir_database_round_trips(tuned_dir, tmp_path, db):
    profile = resolve_profile("local")
    summary = import_ms(tuned_dir, profile, db)
    assert summary["records"] >= 4 and summary["workloads"] == 1
    again = import_ms(tuned_dir, profile, db)
    assert again["new_measurements"] == 0  # importing twice adds nothing
    out = tmp_path / "exported"
    assert export_ms(db, profile.name, out)["records"] == summary["records"]
    assert records_summary(out) == records_summary(tuned_dir)
    result = run_cli("query", "SELECT count(*) AS n FROM v_measurements", "--db", db)
    assert result.returncode == 0 and str(summary["records"]) in result.stdout


def test_malformed_databases_are_refused(tmp_path, db):
    profile = resolve_profile("local")
    with pytest.raises(TenforgeError, match="database_workload.json is missing"):
        import_ms(tmp_path, profile, db)
    (tmp_path / "database_workload.json").write_text('["0x1", {"not": "a module"}]\n')
    (tmp_path / "database_tuning_record.json").write_text("{this is not json\n")
    with pytest.raises(TenforgeError, match=r"database_tuning_record.json:1: not valid JSON"):
        import_ms(tmp_path, profile, db)
    (tmp_path / "database_tuning_record.json").write_text('[0, [[[], []], [1.0]]]\n')
    with pytest.raises(TenforgeError, match="not a readable MetaSchedule database"):
        import_ms(tmp_path, profile, db)
    assert not (tmp_path / "store.duckdb").exists()  # nothing written, not even a store


def test_export_refuses_unknown_hardware_and_a_used_folder(tmp_path, db):
    from storage.store import Store

    with Store(db):
        pass
    with pytest.raises(TenforgeError, match="hardware 'nope' is not in store"):
        export_ms(db, "nope", tmp_path / "out")
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "database_workload.json").write_text("")
    with pytest.raises(TenforgeError, match="already holds a MetaSchedule database"):
        export_ms(db, "nope", tmp_path / "used")
