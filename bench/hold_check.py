"""Does a tuned network keep its estimate if the heaviest tasks' picks are re-measured in fresh
processes first? The original database against a "held" one, timed end to end side by side.

Why: a search measures every candidate in one runner process. On the Zen 5 a family of BERT
FFN-matmul schedules measured 3.0 ms there and ran 3.2 ms in 2 of 8 fresh processes and
5.1-5.4 ms in 6 (other schedules of the task: 2.7-2.9 ms in all 8); the database's top 10
records of that task were all of that family (docs/tuning-results.md, fiftieth session).

The held database keeps every task's best record, except for tasks whose best runs at least
`--min-ms` a call: their `--top` best records are measured again in `--processes` fresh
Measurers (fresh worker processes), and the record with the lowest worst-process mean is kept,
with those run times. The original database is not modified. Then both are compiled and timed
end to end `--timings` times each, alternating, each in a fresh Measurer.

    taskset -c 0 .venv/bin/python bench/hold_check.py --network bert --graph nchw16c \\
        --database DIR --out HELD_DIR [--hardware local-1t] [--top 16] [--processes 2] \\
        [--min-ms 1.0] [--timings 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._ms_databases import database_folders, records_by_task  # noqa: E402
from storage.ms_database import MS_FAILED_RUN_SECS  # noqa: E402


def hold(tasks: dict[str, list[tuple[float, Any]]], profile: Any, top: int, processes: int,
         min_s: float, report: Any = print) -> dict[str, tuple[list[float], Any]]:
    """{workload hash: (run seconds to record, record)}: each task's best, or for a heavy task
    the one of its `top` best whose worst mean over `processes` fresh Measurers is lowest."""
    from core.records import MeasureJob
    from core.tvm_env import load_tvm, trace_json
    from tasks.measure import Measurer

    kept = {key: ([float(s) for s in records[0][1].run_secs], records[0][1])
            for key, records in tasks.items()}
    heavy = [key for key, records in tasks.items() if records[0][0] >= min_s]
    if not heavy:
        return kept
    tvm = load_tvm(profile.target)
    jobs, owners = [], []
    for key in heavy:
        for mean, record in tasks[key][:top]:
            jobs.append(MeasureJob(len(jobs), key, tvm.ir.save_json(record.workload.mod),
                                   trace_json(record.trace), 1.0))
            owners.append((key, mean, record))
    worst: list[tuple[float, list[float]]] = [(0.0, [])] * len(jobs)
    for process in range(processes):
        with Measurer(profile) as measurer:
            for i, result in enumerate(measurer.measure(jobs)):
                secs = list(result.run_secs) or [MS_FAILED_RUN_SECS]
                mean = sum(secs) / len(secs)
                if mean > worst[i][0]:
                    worst[i] = (mean, secs)
    for key in heavy:
        mine = [i for i, (owner, _, _) in enumerate(owners) if owner == key]
        pick = min(mine, key=lambda i: worst[i][0])
        report(f"  task {key[:12]}: best recorded {owners[mine[0]][1] * 1e3:.3f} ms, now worst "
               f"{worst[mine[0]][0] * 1e3:.3f}; kept #{mine.index(pick) + 1} of {len(mine)}: "
               f"recorded {owners[pick][1] * 1e3:.3f}, worst now {worst[pick][0] * 1e3:.3f}")
        kept[key] = (worst[pick][1], owners[pick][2])
    return kept


def write_database(kept: dict[str, tuple[list[float], Any]], folder: Path) -> None:
    """A MetaSchedule JSON database in `folder` holding one record per task."""
    from tvm.s_tir import meta_schedule as ms

    folder.mkdir(parents=True, exist_ok=False)
    database = ms.database.JSONDatabase(work_dir=str(folder))
    for secs, record in kept.values():
        workload = database.commit_workload(record.workload.mod)
        database.commit_tuning_record(ms.database.TuningRecord(
            record.trace, workload, run_secs=secs, target=record.target,
            args_info=record.args_info))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True)
    parser.add_argument("--graph", default="exported")
    parser.add_argument("--database", required=True)
    parser.add_argument("--out", required=True, help="the held database's folder (new)")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--top", type=int, default=16)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--min-ms", type=float, default=1.0)
    parser.add_argument("--timings", type=int, default=3)
    args = parser.parse_args()
    if min(args.top, args.processes, args.timings) < 1:
        raise SystemExit("--top, --processes and --timings: each at least 1")
    if "," in args.database:
        raise SystemExit(f"--database {args.database}: give one database folder")
    database_folders(args.database)  # exits in one line if it is not one
    if Path(args.out).exists():
        raise SystemExit(f"--out {args.out} exists: name a new folder for the held database")

    import numpy as np

    from core.tvm_env import load_tvm
    from tasks.hardware import resolve_profile
    from tasks.measure import Measurer
    from tasks.workloads import import_to_relax

    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    print(f"{args.network} ({args.graph}) on {profile.name}: tasks of >= {args.min_ms} ms a "
          f"call, their {args.top} best re-measured in {args.processes} fresh processes")
    kept = hold(records_by_task(args.database), profile, args.top, args.processes,
                args.min_ms / 1e3)
    write_database(kept, Path(args.out))
    relax_json = tvm.ir.save_json(import_to_relax(args.network, 1, None, args.graph))
    timed: dict[str, list[float]] = {"original": [], "held": []}
    for _ in range(args.timings):
        for name, folder in (("original", args.database), ("held", args.out)):
            with Measurer(profile) as measurer:
                run = measurer.run_network(relax_json, folder, repeat=20)
            timed[name].append(float(np.median(run["run_secs"])) * 1e3)
    for name, values in timed.items():
        print(f"{name:8}: end to end {statistics.median(values):.2f} ms median of "
              f"{len(values)} fresh processes ({', '.join(f'{v:.2f}' for v in values)})")


if __name__ == "__main__":
    main()
