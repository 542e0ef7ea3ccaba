"""Is a search's estimate biased low? A task's best records, and records further down its
ranking, measured again in fresh processes, fresh time / recorded time by rank.

Why: a tuned network's estimate is the sum over tasks of occurrences x the best time measured,
and each candidate is measured once. Of hundreds of candidates within a few % of each other,
the fastest-measured one is also the one whose measurement erred lowest, so the estimate is
biased low (a winner's curse), and the network, built and timed, runs above it. On the Zen 4 the
hold re-measured 20 of 21 heavy tasks' bests slower than recorded (median 1.12x), and the built
networks ran 1.06-1.16x their estimates (docs/tuning-results.md, seventy-seventh session). If
the bias is selection, the top ranks re-measure slower than recorded and ranks further down
do not; if it is the process or the hour, every rank moves alike.

For the `--tasks` heaviest tasks (occurrences x best), the records at each of `--ranks`
(0 = the best) are measured in `--processes` fresh Measurers; each line shows the mean of
those against the record.

    .venv/bin/python bench/estimate_bias.py --network bert --graph nchw16c --database DIR \\
        [--hardware local-1t] [--tasks 4] [--ranks 0,1,2,5,10,20,40,80] [--processes 2]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._ms_databases import database_folders  # noqa: E402


def parse_ranks(text: str) -> list[int]:
    """'0,1,5' -> [0, 1, 5]; exits in one line on anything but whole numbers >= 0."""
    try:
        ranks = sorted({int(r) for r in text.split(",") if r.strip()})
    except ValueError:
        ranks = []
    if not ranks or ranks[0] < 0:
        raise SystemExit(f"--ranks {text!r}: give ranks as whole numbers >= 0, commas (0: best)")
    return ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True)
    parser.add_argument("--graph", default="exported")
    parser.add_argument("--database", required=True)
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--tasks", type=int, default=4)
    parser.add_argument("--ranks", default="0,1,2,5,10,20,40,80")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    ranks = parse_ranks(args.ranks)
    if min(args.tasks, args.processes) < 1:
        raise SystemExit("--tasks and --processes: each at least 1")
    [folder] = database_folders(args.database)

    from core.records import MeasureJob
    from core.tvm_env import load_tvm, trace_json
    from storage.ms_database import records_by_task
    from tasks.hardware import resolve_profile
    from tasks.measure import Measurer
    from tasks.tuning.hold import heavy_tasks, occurrences
    from tasks.workloads import import_to_relax

    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    weights = occurrences(ms.relax_integration.extract_tasks(
        import_to_relax(args.network, 1, None, args.graph), tvm.target.Target(profile.target)))
    tasks = records_by_task(folder, profile.target)
    # every task, most expensive first (occurrences x best), as the hold ranks them
    heaviest = heavy_tasks({key: records[0][0] for key, records in tasks.items()}, weights,
                           share=0.0, min_s=0.0)[:args.tasks]
    jobs, rows = [], []
    for key in heaviest:
        for rank in ranks:
            if rank < len(tasks[key]):
                recorded, record = tasks[key][rank]
                jobs.append(MeasureJob(len(jobs), key, tvm.ir.save_json(record.workload.mod),
                                       trace_json(record.trace), 1.0))
                rows.append((key, rank, recorded))
    print(f"{args.network} ({args.graph}) on {profile.name}: {len(heaviest)} heaviest tasks "
          f"({', '.join(str(len(tasks[k])) for k in heaviest)} valid records), ranks {ranks}, "
          f"{args.processes} fresh processes each", flush=True)
    fresh: list[list[float]] = [[] for _ in jobs]
    for _ in range(args.processes):
        with Measurer(profile) as measurer:
            for i, result in enumerate(measurer.measure(jobs)):
                if result.run_secs:
                    fresh[i].append(sum(result.run_secs) / len(result.run_secs))
    by_rank: dict[int, list[float]] = {}
    for (key, rank, recorded), times in zip(rows, fresh):
        if not times:
            print(f"  {key[:12]} #{rank:<3} recorded {recorded * 1e3:9.3f} ms: failed fresh")
            continue
        ratio = statistics.mean(times) / recorded
        by_rank.setdefault(rank, []).append(ratio)
        print(f"  {key[:12]} #{rank:<3} recorded {recorded * 1e3:9.3f} ms, fresh "
              f"{statistics.mean(times) * 1e3:9.3f}: {ratio:.3f}x")
    print("fresh / recorded, median over tasks, by rank: " + ", ".join(
        f"#{rank} {statistics.median(v):.3f} ({len(v)})" for rank, v in sorted(by_rank.items())))


if __name__ == "__main__":
    main()
