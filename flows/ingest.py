"""The `ingest` flow: bring the shards other machines exported into this store (the fleet
without a shared DuckDB file; storage/ingest.py)."""

from __future__ import annotations

from prefect import flow

from flows._runs import current_run_id, recorded_run
from tasks import prefect_tasks as t
from tasks.ingest import validate_ingest


@flow(name="ingest", log_prints=True)
def ingest(sources: list[str] | None = None, db: str | None = None) -> dict:
    """Load every shard under `sources` that this store has not ingested yet: checksummed,
    idempotent, resumable.

    Args:
        sources: folders the fleet's machines export shards to (default: $TENFORGE_INBOX, a
            list separated by ':', or data/inbox).
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    spec = validate_ingest(db, sources)
    with recorded_run(spec.db, current_run_id(), "ingest", {"sources": list(spec.sources)},
                      None) as out:
        out.update(t.ingest_shards(spec.db, list(spec.sources)))
    print(f"ingest done: {out['shards_new']} new shards of {out['shards_found']} found, "
          f"{out['measurements_added']} new measurements")
    return out
