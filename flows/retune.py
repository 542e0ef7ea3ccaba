"""The `retune` flow: tune a network on a hardware profile with MetaSchedule, driven by the best
learned cost model, measure end-to-end latency, and store the tuning curve with its lineage.
Scheduled per profile in prefect.yaml; skips the work when nothing changed since last time."""

from __future__ import annotations

from prefect import flow
from pydantic import NonNegativeInt, PositiveInt

from core.graphs import Graph
from flows._runs import current_run_id, recorded_run
from tasks import prefect_reports as reports
from tasks import prefect_tasks as t
from tasks.retune import validate_retune
from tasks.tuning import Scheduler


@flow(name="retune", log_prints=True)
def retune(network: str = "tiny_cnn", hardware: str = "local", trials: PositiveInt = 64,
           minutes: float | None = None, cost_model: str | None = None,
           scheduler: Scheduler = "gradient",
           flops_share: float = 0.9, population: PositiveInt | None = None,
           batch_size: PositiveInt = 1, seed: int = 0, force: bool = False,
           out: str | None = None, input_size: PositiveInt | None = None,
           warm_start: NonNegativeInt | None = None, graph: Graph | None = None,
           trials_per_round: PositiveInt | None = None,
           warm_samples: PositiveInt | None = None, hold_top: NonNegativeInt | None = None,
           rerank_model: str | None = None, tile_mix: float | None = None,
           db: str | None = None) -> dict:
    """Tune `network` on `hardware` and record what it gained.

    Args:
        network: a zoo network or a registered name (`tenforge networks`), or a file:
            FILE.py:FACTORY, FILE.pt2 (torch.export.save) or FILE.onnx.
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
            is 512; every round samples, mutates and scores them, so smaller is faster and
            explores less). Default: 8x the candidates a round measures (4x after a warm
            start, the tuning bench's default learned search), 64 to 256 (instant: 256
            ranked per task).
        batch_size: the network's batch size.
        seed: seeds the search.
        force: tune even if network, profile, cost model and budget are unchanged.
        out: also write the tuned network as a deployable folder here (a new folder; see
            `tenforge compile`); a skipped retune writes the last tuning's.
        input_size: a zoo network's image side / sequence length (default: its own).
        warm_start: before the search, measure the learned model's top K of
            `warm_samples` ranked candidates per task (out of `trials`, at most half of
            them); the search starts from them. Default: 4 with a learned model and a
            searching scheduler, as the tuning bench's default learned search
            (tasks/tuning/defaults.py), none otherwise; 0: none.
        graph: how the network is prepared before tuning: exported (as torch.export gives
            it), folded (what depends on the weights alone runs once, at load; operators
            after a convolution fuse into it), nhwc (folded, convolutions in NHWC) or
            nchw8c / nchw16c (folded, convolutions in NCHW with channels blocked by one
            AVX2 / AVX-512 vector), packed8 / packed16 (those, and each linear layer's
            weight packed in blocks of 8 / 16 columns, its output computed in blocks), or
            blocked (nchw8c or nchw16c, this CPU's vector), or fp16 (a GPU's: folded, in
            mixed precision for its tensor cores).
            Default: blocked on a CPU, exported on a GPU (core.graphs.default_graph).
        trials_per_round: candidates measured per turn of a task (default: what gives every
            task two turns of `trials`, 4 to 64). With a pre-trained model, 8 gives the first
            estimate over every task sooner and leaves the rest to the heaviest tasks.
        warm_samples: sampled candidates a warm start ranks per task (default 128, the
            bench's; 256 ranks more where a network has few tasks, docs/tuning-results.md).
        hold_top: before compiling, each heavy task's best is measured again in fresh
            processes, and where it slipped, its `hold_top` best (default 16; 0: no hold,
            compile from the search's picks as measured; tasks/tuning/hold.py).
        rerank_model: a registered model trained on the asm columns; with the instant
            scheduler or a warm start on an x86 CPU, it re-orders each task's top 32 picks by
            their compiled code before they are measured (tasks/asm_rerank.py; a build each;
            on the Zen 4 no better than measuring for that time, docs/tuning-results.md).
        tile_mix: with a learned model and a searching scheduler, the share of each task's
            measurements kept outside the innermost tile factor it measured most (0.25 in
            the bench; models/tile_mix.py): a pre-trained model can favour one vector width
            that is not this CPU's fastest and rank badly within it. On the Zen 4 it reached
            MetaSchedule's final sooner than the default search in every median over 12
            cells (resnet18, mobilenet_v2, resnet50) and moved nothing on BERT; on 8-lane
            code (AVX-512 off) it won one resnet18 seed of two (docs/tuning-results.md).
            Default: off; 0: off.
        db: DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb).
    """
    spec = validate_retune(db, network, hardware, trials, minutes, cost_model, scheduler,
                           flops_share, batch_size, seed, population, out, input_size,
                           warm_start, graph, trials_per_round, warm_samples, hold_top,
                           rerank_model, tile_mix)
    print(spec.model_choice)
    run_id = current_run_id()
    with recorded_run(spec.db, run_id, "retune", spec.as_run_params(), spec.hardware) as summary:
        if not spec.workload.is_zoo:
            t.register_workload(spec.db, spec.workload, spec.hardware)
        current = t.network_hash(spec.workload, batch_size, spec.input_size, spec.graph)
        last = None if force else t.unchanged_tuning(spec, current)
        if last is not None:
            summary.update(skipped=True, last_tuning_id=last["tuning_id"],
                           tuned_ms=round(last["tuned_latency_s"] * 1e3, 4))
            print(f"retune skipped: network, profile, cost model and budget are unchanged "
                  f"since {last['tuning_id']} ({summary['tuned_ms']} ms); pass force=true to "
                  "tune anyway")
        else:
            summary.update(t.tune_network(spec, run_id))
            reports.publish_tuning_report(spec.db, run_id, spec.network, spec.hardware)
        if spec.out:  # the deployable folder: of this tuning, or of the unchanged last one
            t.compile_library(spec.db, spec.network, spec.hardware,
                              last["tuning_id"] if last else run_id, spec.out)
            summary.update(library_dir=spec.out)
    if last is None:
        s = summary
        print(f"retune done: {s['network']} on {s['hardware']} with {s['cost_model']}: "
              f"{s['untuned_ms']} ms untuned -> {s['tuned_ms']} ms tuned ({s['speedup']}x) "
              f"after {s['trials']} trials in {s['search_s']} s ({s['trials_per_min']}/min, "
              f"{s['measure_s']} s of it measuring, {s['build_s']} s of that building; "
              "search ended by "
              f"{s['stop_reason']}"
              + (f"; {s['tasks_filled']} tasks it left unmeasured got the model's pick"
                 if s.get("tasks_filled") else "")
              + f"); schedules in {s['database_dir']}")
    return summary
