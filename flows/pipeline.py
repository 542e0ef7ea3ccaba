"""The `pipeline` flow: the main job on embedded defaults (local CPU, a DuckDB file, Prefect's
ephemeral API). Today: load the shipped seed dataset into an empty store, collect on two small
networks, then show where the data is."""

from __future__ import annotations

from prefect import flow

from flows.collect import collect
from tasks.prefect_tasks import load_seed_if_empty
from tasks.collect import default_db, prepare_db_path
from storage.reports import measurement_summary


@flow(name="pipeline", log_prints=True)
def pipeline(hardware: str = "local", networks: list[str] = ["mlp", "tiny_cnn"],  # noqa: B006
             candidates_per_task: int = 4, seed: int = 0, db: str | None = None) -> dict:
    """Seed an empty store, collect a few candidates per task of small networks on `hardware`,
    then summarize.

    Args:
        hardware: a hardware profile name; 'local' = this CPU.
        networks: zoo networks to collect.
        candidates_per_task: distinct candidates per tuning task.
        seed: sampling seed.
        db: DuckDB file (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    db_path = str(prepare_db_path(db or default_db()))
    seeded = load_seed_if_empty(db_path)
    summary = collect(hardware=hardware, networks=networks,
                      candidates_per_task=candidates_per_task, seed=seed, db=db_path)
    print(measurement_summary(db_path))
    return {**summary, "seed": seeded}
