"""Tuning throughput against the collect path, on the same tasks, side by side in one run.

Issue 15's bar: a retune measures at least 70% as many candidates per minute as the collect path
does on the same tasks. The collect path only builds and runs random candidates (its rate is
the measuring alone); a retune also searches (MetaSchedule's evolutionary search replays and
mutates traces, and the cost model ranks them) between measured batches. For one network and
profile this bench:

1. collects `--collect` random candidates of each task the retune would tune (the tasks with
   90% of FLOPs x occurrences) into a fresh store: the collect path's candidates/min;
2. retunes the network for `--trials` trials per variant and seed: trials/min (trials over the
   search's wall time), the share of it spent building and running candidates, and the
   estimated latency reached (is the faster search as good?), at the end and after the
   shortest run's search time (the same wall time for every run).

A variant is `t<threads>:p<population>[:nocache]`, threads a number or `all` (every core this
process may use), e.g. `t1:p256` (the search before issue 15: one thread, population 256);
`nocache` extracts every ranked candidate's features anew instead of reusing those of programs
ranked before (models/feature_cache.py; a learned `--cost-model` only). The column "searching s"
is the search's wall time outside building and running candidates: what the cache cuts;
"search CPU s" the CPU time of the tuning process over the search (builds and runs are in
worker processes), which other load on the machine and a SIGSTOP pause leave alone.

    .venv/bin/python bench/throughput.py [--network resnet18] [--hardware local]
        [--trials 128] [--collect 4] [--variants t1:p256,tall:p256,tall:p128]
        [--seeds 0,1] [--cost-model metaschedule-xgb|shipped]

What the feature cache saves, side by side (docs/tuning-results.md, 2026-11-25):

    .venv/bin/python bench/throughput.py --hardware local-1t --trials 300 --collect 2 \
        --variants t1:p120,t1:p120:nocache --seeds 0,1,2 --cost-model shipped
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from core.procs import usable_cores  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.collect import measure_pending, network_task_ids, sample_task  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.shipped import require_shipped_for  # noqa: E402
from tasks.tuning import TaskShare, select_tasks, tune_network  # noqa: E402
from tasks.workloads import extract_network_tasks  # noqa: E402

FLOPS_SHARE = 0.9  # the retune default: the same tasks in both paths


def parse_variant(text: str) -> tuple[int, int, bool]:
    """`t<threads|all>:p<population>[:nocache]` -> (threads, population, feature cache)."""
    try:
        threads, population, *rest = text.split(":")
        assert threads[0] == "t" and population[0] == "p" and rest in ([], ["nocache"])
        return (usable_cores() if threads[1:] == "all" else int(threads[1:]),
                int(population[1:]), not rest)
    except (ValueError, AssertionError, IndexError):
        sys.exit(f"bad variant {text!r}: expected t<threads|all>:p<population>[:nocache], "
                 "e.g. tall:p256")


def collect_rate(network: str, profile, db: str, per_task: int, seed: int) -> dict:
    """The collect path on the tasks a retune tunes: sample, then build and run every
    candidate; candidates/min over the measuring (build + run) as `tenforge collect` reports."""
    tasks = extract_network_tasks(network, 1, None, profile.target)
    chosen = select_tasks([TaskShare(t.task_name, t.flops, t.weight) for t in tasks],
                          FLOPS_SHARE)
    ids = network_task_ids(db, profile, network, 1)
    task_ids = [ids[tasks[i].workload_hash] for i in chosen]
    for task_id in task_ids:
        sample_task(db, profile, task_id, per_task, seed)
    return measure_pending(db, profile, task_ids, measure_batch=64, flow_run_id=None,
                           report=lambda line: None)


def _estimate_at(result, seconds: float) -> float | str:
    """The run's estimated latency (ms) after `seconds` of search, '-' if not all tasks had a
    measurement by then."""
    reached = [p.estimated_s for p in result.curve
               if p.estimated_s is not None and p.wall_s <= seconds + 1e-9]
    return round(min(reached) * 1e3, 3) if reached else "-"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", default="resnet18")
    parser.add_argument("--hardware", default="local", help="profile (this machine's)")
    parser.add_argument("--trials", type=int, default=128)
    parser.add_argument("--collect", type=int, default=4, help="random candidates per task")
    parser.add_argument("--variants", default="t1:p256,tall:p256,tall:p128")
    parser.add_argument("--seeds", default="0,1")
    parser.add_argument("--cost-model", default="metaschedule-xgb",
                        choices=["metaschedule-xgb", "shipped"])
    args = parser.parse_args()
    profile = resolve_profile(args.hardware)
    variants = [(v, *parse_variant(v)) for v in args.variants.split(",")]
    seeds = [int(s) for s in args.seeds.split(",")]
    model = "xgb" if args.cost_model == "metaschedule-xgb" \
        else str(require_shipped_for(profile).path)
    work = scratch_dir("throughput")
    print(f"{args.network} on {profile.name} ({profile.num_threads} measuring threads, "
          f"{usable_cores()} cores); cost model {args.cost_model}; {args.trials} trials per "
          f"retune; tasks with {FLOPS_SHARE:.0%} of FLOPs; work in {work}", flush=True)

    started = time.monotonic()
    collected = collect_rate(args.network, profile, str(work / "collect.duckdb"),
                             args.collect, seeds[0])
    rate = collected["candidates_per_min"]
    print(f"collect path: {collected['measured']} candidates in {collected['seconds']} s of "
          f"measuring = {rate} candidates/min ({time.monotonic() - started:.0f} s with "
          "sampling)", flush=True)

    rows, per_variant, results = [], {}, []
    for seed in seeds:  # seed-major: a drift of the machine hits every variant alike
        for label, threads, population, cache in variants:
            result = tune_network(args.network, profile, work / f"{label}-{seed}".replace(":", ""),
                                  args.trials, cost_model=model, population=population,
                                  seed=seed, flops_share=FLOPS_SHARE, search_threads=threads,
                                  feature_cache=cache, report=lambda line: None)
            per_min = 60 * result.trials / result.search_s
            per_variant.setdefault(label, []).append(
                (per_min, result.estimated_s, result.search_cpu_s))
            results.append(result)
            reused = result.feature_cache or {}
            rows.append((label, seed, result.trials, round(result.search_s, 1),
                         round(result.measure_s, 1), round(result.build_s, 1),
                         round(result.search_s - result.measure_s, 1),
                         round(result.search_cpu_s, 1),
                         f"{result.measure_s / result.search_s:.0%}", round(per_min, 1),
                         f"{per_min / rate:.0%}",
                         f"{reused['hits'] / (reused['hits'] + reused['misses']):.0%}"
                         if reused.get("misses") else "-",
                         round(result.estimated_s * 1e3, 3) if result.estimated_s else "-"))
            print(f"{label} seed {seed}: {result.trials} trials in {result.search_s:.0f} s "
                  f"({per_min:.1f}/min, {per_min / rate:.0%} of collect), est. "
                  f"{(result.estimated_s or float('nan')) * 1e3:.3f} ms", flush=True)
    # the same wall time for every run: the shortest search's (a faster search may reach a
    # better estimate in the time a slower one took for fewer trials, or a worse one)
    same_time = min(r.search_s for r in results)
    rows = [(*row, _estimate_at(result, same_time)) for row, result in zip(rows, results)]
    print()
    print(f"collect path: {rate} candidates/min ({collected['measured']} candidates, "
          f"{args.collect} per task)")
    print(format_table(["variant", "seed", "trials", "search s", "measuring s",
                        "of it building s", "searching s",
                        "search CPU s",
                        "measuring", "trials/min", "vs collect", "features reused", "est. ms",
                        f"est. ms at {same_time:.0f} s"], rows))
    print()
    summary = []
    for label, runs in per_variant.items():
        per_min = statistics.median(r for r, _, _ in runs)
        est_ms = [e * 1e3 for _, e, _ in runs if e]
        summary.append((label, round(per_min, 1), f"{per_min / rate:.0%}",
                        round(statistics.median(s for _, _, s in runs), 1),
                        round(statistics.median(est_ms), 3),
                        f"{min(est_ms):.3f}-{max(est_ms):.3f}"))
    print(format_table(["variant", "median trials/min", "vs collect", "median search CPU s",
                        "median est. ms", "est. ms spread"], summary))


if __name__ == "__main__":
    main()
