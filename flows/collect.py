"""The `collect` flow: measure tensor programs of some networks on one hardware profile."""

from __future__ import annotations

from prefect import flow
from pydantic import PositiveInt

from core.graphs import Graph
from flows._runs import current_run_id, recorded_run
from tasks import prefect_tasks as t
from tasks.collect import validate_collect


@flow(name="collect", log_prints=True)
def collect(hardware: str = "local", networks: list[str] = ["mlp", "tiny_cnn"],  # noqa: B006
            candidates_per_task: PositiveInt = 8, seed: int = 0,
            batch_size: PositiveInt = 1, db: str | None = None,
            measure_batch: PositiveInt = 16, outbox: str | None = None,
            input_size: PositiveInt | None = None, graph: Graph = "exported",
            simt: bool = False, reuse_tasks: bool = False, asm: bool = False) -> dict:
    """Import `networks` into TVM, sample `candidates_per_task` schedules per tuning task from
    MetaSchedule's design space, build and run them on `hardware`, store every measurement.

    Re-running with the same parameters measures only what is missing.

    Args:
        hardware: a hardware profile name (`tenforge hardware`); 'local' = this CPU.
        networks: zoo or registered network names (`tenforge networks`), or files:
            FILE.py:FACTORY, FILE.pt2 (torch.export.save) or FILE.onnx.
        candidates_per_task: distinct candidates per task (fewer if the design space is smaller).
        seed: sampling seed; the same seed re-derives the same candidates.
        batch_size: the networks' batch size.
        db: DuckDB file (default: $TENFORGE_DB or data/tenforge.duckdb).
        measure_batch: candidates built together before being run one by one.
        outbox: a folder to export this run's shard to, for the fleet's central store to
            ingest (default: $TENFORGE_OUTBOX; unset = no export).
        input_size: zoo networks' image side / sequence length (default: each one's own).
        graph: how the networks are prepared (core.graphs.GRAPHS, as retune's `graph`); a
            prepared network's tasks are stored as network NAME+GRAPH.
        simt: a GPU profile: also sample `candidates_per_task` of each task's SIMT space (its
            design space without tensor cores), so that a tensorizable task has candidates of
            both kinds and what its tensor cores gain can be measured (graph "fp16").
        reuse_tasks: zoo networks the store already lists (same graph, batch and size) are not
            imported again: their stored tasks are sampled and measured (a presampled or
            resumed store; 10-40 s saved a network).
        asm: an x86 CPU profile: each build also keeps what its code does, the asm columns
            (models/asm_features.py; bench/asm_cost.py measures what it costs the collect).
    """
    spec = validate_collect(db, hardware, networks, candidates_per_task, seed, batch_size,
                            measure_batch, outbox, input_size, graph, simt, reuse_tasks, asm)
    run_id = current_run_id()
    params = {k: v for k, v in spec.as_run_params().items() if k not in ("db", "outbox")}
    with recorded_run(spec.db, run_id, "collect", params, spec.hardware) as summary:
        task_ids: list[int] = []
        for workload in spec.workloads:
            task_ids += t.import_network(spec.db, spec.hardware, workload, batch_size,
                                         input_size, spec.graph, spec.reuse_tasks)
        task_ids = list(dict.fromkeys(task_ids))  # networks share tasks
        # Sequential on purpose: each sample writes the store, and TVM sampling is CPU-bound.
        new = sum(t.sample_candidates(spec.db, spec.hardware, task_id, candidates_per_task,
                                      seed)["new"] for task_id in task_ids)
        if spec.simt:
            new += sum(t.sample_candidates(spec.db, spec.hardware, task_id, candidates_per_task,
                                           seed, simt=True)["new"] for task_id in task_ids)
        measured = t.measure_candidates(spec.db, spec.hardware, task_ids, measure_batch, run_id,
                                        asm=spec.asm)
        summary.update({"db": spec.db, "hardware": spec.hardware, "tasks": len(task_ids),
                        "new_candidates": new, **measured})
    if spec.outbox:
        summary["exported"] = t.export_run_shard(spec.db, run_id, spec.outbox)
    print(f"collect done: {summary}")
    return summary
