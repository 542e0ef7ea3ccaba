"""The `ingest` flow: bring the shards other machines exported into this store (the fleet
without a shared DuckDB file; storage/ingest.py)."""

from __future__ import annotations

from prefect import flow

from flows._runs import current_run_id, recorded_run
from tasks import prefect_tasks as t


@flow(name="ingest", log_prints=True)
def ingest(sources: list[str] | None = None, db: str | None = None) -> dict:
    """Load every shard under `sources` that this store has not ingested yet: checksummed,
    idempotent, resumable.

    Args:
        sources: folders the fleet's machines export shards to (default: $TENFORGE_INBOX, a
            list separated by ':', or data/inbox).
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    from tasks.collect import default_db, prepare_db_path
    from tasks.ingest import default_inbox, validate_sources

    folders = validate_sources(sources or default_inbox())
    db_path = str(prepare_db_path(db or default_db()))
    with recorded_run(db_path, current_run_id(), "ingest", {"sources": folders}, None) as out:
        out.update(t.ingest_shards(db_path, folders))
    print(f"ingest done: {out['shards_new']} new shards of {out['shards_found']} found, "
          f"{out['measurements_added']} new measurements")
    return out
