"""Does a tuned network keep its estimate if the heaviest tasks' picks are re-measured in fresh
processes first? The original database against a "held" one, timed end to end side by side.

Why: a search measures every candidate in one runner process. On the Zen 5 a family of BERT
FFN-matmul schedules measured 3.0 ms there and ran 3.2 ms in 2 of 8 fresh processes and
5.1-5.4 ms in 6 (other schedules of the task: 2.7-2.9 ms in all 8); the database's top 10
records of that task were all of that family (docs/tuning-results.md, fiftieth session).

The held database is the one a retune now compiles from (tasks.tuning.hold): every task's best
record, except for heavy tasks: each one's best is measured again in `--processes` fresh
Measurers (fresh worker processes), and where it ran over 10% slower than recorded its `--top`
best (itself among them) are, in `--processes` more; another record replaces the best only
where its worst-process mean is over 10% below the best's there, and is kept with those run
times. A task
is heavy as a retune decides (best x occurrences at least `--share` of the estimate and
`--floor-ms`; the defaults are the retune's), or with
`--min-ms`, where its best runs at least that long a call (session 50's rule). The original
database is not modified. Then both are compiled and timed end to end `--timings` times each,
alternating, each in a fresh Measurer.

    taskset -c 0 .venv/bin/python bench/hold_check.py --network bert --graph nchw16c \\
        --database DIR --out HELD_DIR [--hardware local-1t] [--top 16] [--processes 2] \\
        [--share 0.05] [--floor-ms 0.5 | --min-ms 1.0] [--timings 3]
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
from storage.ms_database import records_by_task  # noqa: E402
from tasks.tuning.hold import (  # noqa: E402
    HOLD_MIN_S,
    HOLD_PROCESSES,
    HOLD_SHARE,
    HOLD_TOP,
    heavy_tasks,
    hold,
    occurrences,
    write_database,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True)
    parser.add_argument("--graph", default="exported")
    parser.add_argument("--database", required=True)
    parser.add_argument("--out", required=True, help="the held database's folder (new)")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--top", type=int, default=HOLD_TOP)
    parser.add_argument("--processes", type=int, default=HOLD_PROCESSES)
    parser.add_argument("--share", type=float, default=HOLD_SHARE)
    parser.add_argument("--floor-ms", type=float, default=HOLD_MIN_S * 1e3)
    parser.add_argument("--min-ms", type=float, default=None,
                        help="heavy: a best of at least this a call (instead of --share)")
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
    from tvm.s_tir import meta_schedule as ms

    relax_mod = import_to_relax(args.network, 1, None, args.graph)
    relax_json = tvm.ir.save_json(relax_mod)
    tasks = records_by_task(args.database, profile.target)
    if args.min_ms is not None:
        rule = f"tasks of >= {args.min_ms} ms a call"
        heavy = [key for key, records in tasks.items() if records[0][0] >= args.min_ms / 1e3]
    else:
        rule = f"tasks of >= {args.share:.0%} of the estimate and >= {args.floor_ms} ms"
        heavy = heavy_tasks({key: records[0][0] for key, records in tasks.items()},
                            occurrences(ms.relax_integration.extract_tasks(
                                relax_mod, tvm.target.Target(profile.target))),
                            args.share, args.floor_ms / 1e3)
    print(f"{args.network} ({args.graph}) on {profile.name}: {len(heavy)} {rule}; their best "
          f"re-measured in {args.processes} fresh processes, their {args.top} best where it "
          "slipped")
    kept, _ = hold(tasks, heavy, profile, args.top, args.processes)
    write_database(kept, Path(args.out), profile.target)
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
