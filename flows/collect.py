"""The `collect` flow: measure tensor programs of some networks on one hardware profile."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from flows._runs import current_run_id, recorded_run
from tasks import collect as steps
from tasks import prefect_tasks as t


@flow(name="collect", log_prints=True)
def collect(hardware: str = "local", networks: list[str] = ["mlp", "tiny_cnn"],  # noqa: B006
            candidates_per_task: PositiveInt = 8, seed: int = 0,
            batch_size: PositiveInt = 1, db: str | None = None,
            measure_batch: PositiveInt = 16, outbox: str | None = None) -> dict:
    """Import `networks` into TVM, sample `candidates_per_task` schedules per tuning task from
    MetaSchedule's design space, build and run them on `hardware`, store every measurement.

    Re-running with the same parameters measures only what is missing.

    Args:
        hardware: a hardware profile name (`tenforge hardware`); 'local' = this CPU.
        networks: zoo network names (`tenforge networks`).
        candidates_per_task: distinct candidates per task (fewer if the design space is smaller).
        seed: sampling seed; the same seed re-derives the same candidates.
        batch_size: the networks' batch size.
        db: DuckDB file (default: $TENFORGE_DB or data/tenforge.duckdb).
        measure_batch: candidates built together before being run one by one.
        outbox: a folder to export this run's shard to, for the fleet's central store to
            ingest (default: $TENFORGE_OUTBOX; unset = no export).
    """
    profile = steps.validate_collect(hardware, networks, candidates_per_task, batch_size,
                                     measure_batch)
    db_path = str(steps.prepare_db_path(db or steps.default_db()))
    steps.check_outbox(outbox or steps.default_outbox())
    run_id = current_run_id()
    params = {"hardware": profile.name, "networks": list(networks),
              "candidates_per_task": candidates_per_task, "seed": seed,
              "batch_size": batch_size, "measure_batch": measure_batch}
    with recorded_run(db_path, run_id, "collect", params, profile.name) as summary:
        task_ids: list[int] = []
        for network in networks:
            task_ids += t.import_network(db_path, profile.name, network, batch_size)
        task_ids = list(dict.fromkeys(task_ids))  # networks share tasks
        # Sequential on purpose: each sample writes the store, and TVM sampling is CPU-bound.
        new = sum(t.sample_candidates(db_path, profile.name, task_id, candidates_per_task,
                                      seed)["new"] for task_id in task_ids)
        measured = t.measure_candidates(db_path, profile.name, task_ids, measure_batch, run_id)
        summary.update({"db": db_path, "hardware": profile.name, "tasks": len(task_ids),
                        "new_candidates": new, **measured})
    outbox = outbox or steps.default_outbox()
    if outbox:
        summary["exported"] = t.export_run_shard(db_path, run_id, outbox)
    print(f"collect done: {summary}")
    return summary
