"""The `search` flow: an Optuna study over cost-model families and hyperparameters on a store's
measurements, scored on a held-out split; the winner is retrained, tested and registered."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from storage.reports import model_leaderboard
from tasks import prefect_tasks as t
from tasks.artifacts import publish_markdown


@flow(name="search", log_prints=True)
def search(hardware: list[str] | None = None, networks: list[str] | None = None,
           split: str = "by_task", holdout: list[str] | None = None,
           families: list[str] | None = None, trials: PositiveInt = 20, time_budget_s: float = 900.0,
           metric: str = "peak1", multi_objective: bool = False, seed: int = 0,
           max_epochs: PositiveInt = 30, study: str | None = None, db: str | None = None) -> dict:
    """Find the best cost model for this data, chosen on held-out tasks.

    Args:
        hardware: profiles whose measurements to use (default: every profile in the store).
        networks: only tasks of these networks (default: all).
        split: within_task, by_task, by_target or by_network.
        holdout: the hardware (by_target) or networks (by_network) to test on.
        families: model families to search (default: xgb, lgbm, mlp, attention,
            bilstm_attention).
        trials: total trials the study should have (a re-run continues it).
        time_budget_s: stop starting new trials after this many seconds.
        metric: validation objective: peak1 (top-1 peak score), peak5, pairwise, avg_peak5.
        multi_objective: also maximize pairwise accuracy and minimize training time.
        seed: seeds the split, the sampler and the models.
        max_epochs: epoch cap of the neural families.
        study: study name (default: derived from data, split and seed).
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    from tasks.collect import default_db, prepare_db_path
    from tasks.training import validate_search

    db_path = str(prepare_db_path(db or default_db()))
    run_id = current_run_id()
    specs = validate_search(db_path, hardware, networks, split, holdout, families, trials,
                            time_budget_s, metric, multi_objective, seed, max_epochs, study)
    data_spec, split_spec, search_spec = specs["data_spec"], specs["split_spec"], \
        specs["search_spec"]
    study = specs["study"]
    params = {"data": data_spec, "split": split_spec, "search": search_spec, "study": study}
    with recorded_run(db_path, run_id, "search", params,
                      ",".join(data_spec["hardware"])) as summary:
        best = t.search_models(db_path, data_spec, split_spec, search_spec, study, run_id)
        model = t.train_and_register(db_path, data_spec, split_spec, best["family"],
                                     best["params"], seed, best["study_name"],
                                     best["best_trial"], run_id)
        summary.update({"study": best["study_name"], "trials": best["trials"],
                        "family": best["family"], "valid_" + metric: best["valid_value"],
                        "model_id": model["model_id"], "model_path": model["path"],
                        "test": model["test"]})
        publish_markdown("search-leaderboard", "# Registered models, best held-out top-1 "
                         "first\n\n" + model_leaderboard(db_path, markdown=True),
                         description=f"after study {best['study_name']}")
    print(f"search done: best {best['family']} (trial {best['best_trial']}), registered "
          f"{model['model_id']}")
    return summary
