"""The `pipeline` flow: the main job on embedded defaults (local CPU, a DuckDB file, Prefect's
ephemeral API): load the shipped seed dataset into an empty store, collect on two small networks,
run a small cost-model search on everything the store holds, then show what is there."""

from __future__ import annotations

from prefect import flow

from flows.collect import collect
from flows.search import search
from tasks.prefect_tasks import load_seed_if_empty
from tasks.collect import default_db, prepare_db_path
from storage.reports import measurement_summary, model_leaderboard


@flow(name="pipeline", log_prints=True)
def pipeline(hardware: str = "local", networks: list[str] = ["mlp", "tiny_cnn"],  # noqa: B006
             candidates_per_task: int = 4, seed: int = 0, db: str | None = None,
             search_trials: int = 4, search_budget_s: float = 120.0) -> dict:
    """Seed an empty store, collect a few candidates per task of small networks on `hardware`,
    then summarize.

    Args:
        hardware: a hardware profile name; 'local' = this CPU.
        networks: zoo networks to collect.
        candidates_per_task: distinct candidates per tuning task.
        seed: sampling seed.
        db: DuckDB file (default: $TENFORGE_DB or data/tenforge.duckdb).
        search_trials: trials of the small search (xgb and mlp; `tenforge search` for more).
        search_budget_s: time budget of that search.
    """
    db_path = str(prepare_db_path(db or default_db()))
    seeded = load_seed_if_empty(db_path)
    summary = collect(hardware=hardware, networks=networks,
                      candidates_per_task=candidates_per_task, seed=seed, db=db_path)
    found = search(families=["xgb", "mlp"], trials=search_trials,
                   time_budget_s=search_budget_s, max_epochs=10, seed=seed, db=db_path)
    print(measurement_summary(db_path))
    print(model_leaderboard(db_path))
    return {**summary, "seed": seeded, "search": found}
