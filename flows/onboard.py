"""The `onboard` flow: first contact with a hardware profile that has no data yet (see
tasks/onboard.py): measure a calibration set, fine-tune the best pre-trained model to it, and
report how well each model ranks held-out tasks here."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.onboard import PER_TASK, validate_onboard
from tasks.shipped import SHIPPED

BASELINE_FAMILY = "metaschedule_xgb"


@flow(name="onboard", log_prints=True)
def onboard(hardware: str = "local", candidates: PositiveInt = 256, parent: str | None = None,
            family: str = "xgb", strategy: str = "residual", seed: int = 0,
            db: str | None = None) -> dict:
    """Calibrate `hardware`, fine-tune a pre-trained model to it, and report held-out accuracy
    beside the un-tuned model and MetaSchedule's XGB trained on the same calibration set.

    Args:
        hardware: the new profile; 'local' = this CPU.
        candidates: size of the calibration set (12 per task, over the most informative tasks
            other profiles measured).
        parent: the pre-trained model to fine-tune (default: the newest pre-trained model that
            never saw this profile; if there is none, one is pre-trained first).
        family: the family to pre-train when there is no pre-trained model.
        strategy: how to fine-tune (`tenforge transfer`'s strategies). residual (the frozen
            model plus a small model of what it gets wrong) by default: on a 2-thread Zen 3
            with xgb pre-trained on the seed, 180 calibration samples gave held-out top-1
            0.79 / 0.87 / 0.97 (seeds 0-2) with residual and 0.48 / 0.70 / 0.86 with full.
        seed: seeds the held-out split and the models.
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb; the seed dataset is
            loaded into an empty one).
    """
    spec = validate_onboard(db, hardware, candidates, parent, family, strategy, seed)
    db_path, name = spec.db, spec.hardware
    run_id = current_run_id()
    with recorded_run(db_path, run_id, "onboard", spec.as_run_params(), name) as out:
        t.load_seed_if_empty(db_path)
        if spec.parent == SHIPPED:
            parent = t.shipped_parent(db_path, name, asked=True)
        else:  # the one asked for, else a pre-trained one, else the shipped one
            parent = (spec.parent or t.default_parent(db_path, name)
                      or t.shipped_parent(db_path, name))
        if parent is None:
            sources = t.source_profiles(db_path, name)
            parent = t.pretrain(db_path, sources, [], family, {}, None, seed, run_id)["model_id"]
        task_ids = t.stage_calibration(db_path, name, candidates)
        measured = t.measure_candidates(db_path, name, task_ids, 16, run_id)
        result = t.transfer(db_path, parent, name, None, spec.strategy, [], seed, run_id,
                            baseline=BASELINE_FAMILY)
        out.update({"hardware": name, "parent": parent, "model_id": result["model_id"],
                    "calibration_tasks": len(task_ids), "measured": measured["measured"],
                    "errors": measured["errors"], "test_tasks": result["test_tasks"],
                    "pretrained": result["parent_test"], "fine_tuned": result["metrics"],
                    "from_scratch": result["baseline_test"],
                    "retune_uses": t.model_for_tuning(db_path, name)})
        table = reports.publish_onboard_report(name, result)
    print(f"onboard done: {name}, calibration set {len(task_ids) * PER_TASK} candidates over "
          f"{len(task_ids)} tasks ({measured['measured']} newly measured, "
          f"{result['test_tasks']} tasks held out); model {result['model_id']}"
          f"\n{table}\nretune on {name} now uses {out['retune_uses']} (the best top-1 measured "
          "on these held-out tasks)")
    return out
