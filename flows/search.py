"""The `search` flow: an Optuna study over cost-model families and hyperparameters on a store's
measurements, scored on a held-out split; the winner is retrained, tested and registered."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.training_specs import validate_search


@flow(name="search", log_prints=True)
def search(hardware: list[str] | None = None, networks: list[str] | None = None,
           split: str = "by_task", holdout: list[str] | None = None,
           families: list[str] | None = None, trials: PositiveInt = 20,
           time_budget_s: float = 900.0,
           metric: str = "peak1", multi_objective: bool = False, seed: int = 0,
           max_epochs: PositiveInt = 30, study: str | None = None, db: str | None = None,
           register_if_better: bool = False) -> dict:
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
        register_if_better: with a by_network split, register the winner only if it ranks the
            held-out networks better than every model that held any of them out too (the
            registered ones and the one shipped for the rows' CPU), on the networks both held
            out; what the scheduled search does.
    """
    spec = validate_search(db, hardware, networks, split, holdout, families, trials,
                           time_budget_s, metric, multi_objective, seed, max_epochs, study,
                           register_if_better)
    run_id = current_run_id()
    params = {"data": spec.data_spec, "split": spec.split_spec, "search": spec.search_spec,
              "study": spec.study}
    with recorded_run(spec.db, run_id, "search", params,
                      ",".join(spec.data_spec["hardware"])) as summary:
        best = t.search_models(spec.db, spec.data_spec, spec.split_spec, spec.search_spec,
                               spec.study, run_id)
        model = t.train_and_register(spec.db, spec.data_spec, spec.split_spec, best["family"],
                                     best["params"], seed, best["study_name"],
                                     best["best_trial"], run_id,
                                     register_if_better)
        summary.update({"study": best["study_name"], "trials": best["trials"],
                        "family": best["family"], "valid_" + metric: best["valid_value"],
                        "model_id": model["model_id"], "model_path": model["path"],
                        "test": model["test"], "gate": model.get("gate")})
        reports.publish_leaderboard(spec.db, best["study_name"])
    print(f"search done: best {best['family']} (trial {best['best_trial']}), " +
          (f"registered {model['model_id']}" if model["model_id"] else
           f"not registered: {model['gate']['best_rival']} ranks the held-out networks better"))
    return summary
