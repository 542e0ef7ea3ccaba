"""`tenforge report` and the documented views, on a store upgraded by a mere reader."""

import duckdb

from storage.reports import REPORT_SECTIONS, store_report
from storage.store import Store, migrations
from tests.conftest import run_cli


def test_a_reader_upgrades_an_older_store_once_and_sees_the_views(tmp_path):
    path = tmp_path / "old.duckdb"
    con = duckdb.connect(str(path))  # a store written by a tenforge with migrations 1-3 only
    con.execute("CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name VARCHAR, "
                "applied_at TIMESTAMP DEFAULT current_timestamp)")
    for version, name, sql in migrations()[:3]:
        con.execute(sql.read_text())
        con.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)",
                    [version, name])
    con.close()
    with Store(path, read_only=True) as store:
        assert store.read_only
        views = {v for (v,) in store.query("SELECT view_name FROM duckdb_views() "
                                           "WHERE NOT internal")}
        assert {"v_best_latency", "v_model_leaderboard", "v_tuning_history",
                "v_model_lineage", "v_candidate_measurements"} <= views
        assert store.scalar("SELECT count(*) FROM schema_migrations") == len(migrations())


def test_report_on_an_empty_store_says_nothing_yet(db):
    with Store(db):
        pass
    text = store_report(db)
    assert text.count("(nothing yet)") == len(REPORT_SECTIONS)
    markdown = store_report(db, markdown=True)
    assert markdown.startswith("# tenforge report") and "## Model leaderboard" in markdown


def test_report_cli_on_a_missing_store_is_one_line(tmp_path):
    result = run_cli("report", "--db", str(tmp_path / "none.duckdb"))
    assert result.returncode == 2 and "does not exist" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
