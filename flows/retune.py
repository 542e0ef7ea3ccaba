"""The `retune` flow: tune a network on a hardware profile with MetaSchedule, driven by the best
learned cost model, measure end-to-end latency, and store the tuning curve with its lineage.
Scheduled per profile in prefect.yaml; skips the work when nothing changed since last time."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.retune import validate_retune
from tasks.tuning import Scheduler


@flow(name="retune", log_prints=True)
def retune(network: str = "tiny_cnn", hardware: str = "local", trials: PositiveInt = 64,
           minutes: float | None = None, cost_model: str | None = None,
           scheduler: Scheduler = "gradient",
           flops_share: float = 0.9, population: PositiveInt = 256,
           batch_size: PositiveInt = 1, seed: int = 0, force: bool = False,
           db: str | None = None) -> dict:
    """Tune `network` on `hardware` and record what it gained.

    Args:
        network: a zoo network (`tenforge networks`).
        hardware: a hardware profile name; 'local' = this CPU.
        trials: measured candidates in all (MetaSchedule's max_trials_global).
        minutes: wall-clock budget for the search; stops early when spent (default: none).
        cost_model: a registered model id, 'metaschedule-xgb' for MetaSchedule's own, or
            empty for the best registered model for this hardware.
        scheduler: gradient (MetaSchedule's), round-robin, gain (tenforge's: by expected
            gain), dual (gain over every (task, design space) pair, GTA-style), or instant
            (no search: per task, rank `population` sampled candidates with the learned model
            and measure the top trials / tasks).
        flops_share: tune only the tasks that carry this share of FLOPs x occurrences.
        population: candidates the evolutionary search keeps per round (MetaSchedule's default
            is 512; every round scores all of them with the cost model, so smaller is faster
            and explores less).
        batch_size: the network's batch size.
        seed: seeds the search.
        force: tune even if network, profile, cost model and budget are unchanged.
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    spec = validate_retune(db, network, hardware, trials, minutes, cost_model, scheduler,
                           flops_share, batch_size, seed, population)
    print(spec.model_choice)
    run_id = current_run_id()
    with recorded_run(spec.db, run_id, "retune", spec.as_run_params(), spec.hardware) as out:
        current = t.network_hash(network, batch_size, spec.input_size)
        last = None if force else t.unchanged_tuning(spec, current)
        if last is not None:
            out.update(skipped=True, last_tuning_id=last["tuning_id"],
                       tuned_ms=round(last["tuned_latency_s"] * 1e3, 4))
            print(f"retune skipped: network, profile, cost model and budget are unchanged since "
                  f"{last['tuning_id']} ({out['tuned_ms']} ms); pass force=true to tune anyway")
            return out
        out.update(t.tune_network(spec, run_id))
        reports.publish_tuning_report(spec.db, run_id, network, spec.hardware)
    print(f"retune done: {out['network']} on {out['hardware']} with {out['cost_model']}: "
          f"{out['untuned_ms']} ms untuned -> {out['tuned_ms']} ms tuned "
          f"({out['speedup']}x) after {out['trials']} trials in {out['search_s']} s (search "
          f"ended by {out['stop_reason']}); "
          f"schedules in {out['database_dir']}")
    return out
