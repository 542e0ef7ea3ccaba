"""The `pretrain` and `transfer` flows: learn on the hardware you have data for, then adapt to a
new profile from a few of its measurements (Verma et al.; TenSet's fine-tune modes; MTL-TLP)."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.training_specs import validate_pretrain, validate_transfer


@flow(name="pretrain", log_prints=True)
def pretrain(hardware: list[str] | None = None, family: str = "mlp",
             params: dict | None = None, from_model: str | None = None,
             networks: list[str] | None = None, seed: int = 0, db: str | None = None,
             holdout: list[str] | None = None, register_if_better: bool = False) -> dict:
    """Train one model across source profiles (hardware features as inputs) and register it.

    Args:
        hardware: source profiles (default: every profile in the store).
        family: model family (ignored when from_model is given).
        params: hyperparameters (override from_model's).
        from_model: a registered model id whose kind and configuration to reuse (e.g. the
            search winner).
        networks: only these networks' tasks (default: all).
        seed: seeds the validation split and the model.
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
        holdout: networks kept out of training and scored (validation on whole networks).
        register_if_better: register only if it ranks the held-out networks better than
            every model that held any of them out too, on the networks both held out (the
            scheduled pretrain does).
    """
    spec = validate_pretrain(db, hardware, family, params, from_model, networks, holdout,
                             register_if_better)
    run_id = current_run_id()
    with recorded_run(spec.db, run_id, "pretrain", spec.as_run_params(),
                      ",".join(spec.hardware)) as out:
        out.update(t.pretrain(spec.db, list(spec.hardware), list(spec.networks), spec.family,
                              spec.params, from_model, seed, run_id, spec.holdout,
                              spec.register_if_better))
    print(f"pretrain done: {out['model_id'] or 'nothing registered (a model that never saw '}"
          f"{'' if out['model_id'] else 'the held-out networks ranks them better)'}")
    return out


@flow(name="transfer", log_prints=True)
def transfer(parent: str | None = None, hardware: str = "local", samples: PositiveInt | None = 200,
             strategy: str = "full", networks: list[str] | None = None, seed: int = 0,
             db: str | None = None) -> dict:
    """Fine-tune registered model `parent` to `hardware` from `samples` of its measurements;
    score it on held-out tasks of that profile and register it as the parent's child.

    Args:
        parent: model id of the pre-trained model (`tenforge models`); default: the newest
            model a pretrain run registered.
        hardware: the target profile; 'local' = this CPU.
        samples: target measurements to fine-tune on (None = all of the training tasks').
        strategy: full, head, residual or multi_head.
        networks: only these networks' tasks (default: all).
        seed: seeds the target split, the sample and the new weights.
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    spec = validate_transfer(db, parent, hardware, samples, strategy, networks, seed)
    run_id = current_run_id()
    with recorded_run(spec.db, run_id, "transfer", spec.as_run_params(), spec.hardware) as out:
        out.update(t.transfer(spec.db, spec.parent, spec.hardware, samples, strategy,
                              list(spec.networks), seed, run_id))
    reports.publish_transfer_report(spec.parent, strategy, spec.hardware, out)
    print(f"transfer done: {out['model_id']} (parent {spec.parent})")
    return out
