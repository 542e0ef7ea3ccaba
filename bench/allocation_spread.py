"""How much a task's tuned schedule's run time depends on where its buffers happen to lie.

Why: on the Zen 5, one BERT database's heaviest matmul ran in ~40 ms inside the network in one
process and ~71 ms in two others, with the same build, weights random or the network's own, and
flush-to-zero on or off (bench/network_functions.py, docs/tuning-results.md, fiftieth session).
A search measures every candidate of a task on the same prepared inputs, so a schedule whose
speed hangs on its buffers' addresses (cache-set conflicts of physically indexed caches, 4K
aliasing) can win in the measuring process's layout and lose elsewhere.

For each database, each task's best valid record is built once and timed on `--allocations`
separate sets of inputs held alive at once (each set allocated after a random-sized spacer, so
their addresses differ), `--repeat` times each with the cache flushed between runs as the
search measures. Per task: the fastest and slowest allocation's median, and their ratio.

    taskset -c 0 .venv/bin/python bench/allocation_spread.py --database DIR[,DIR...] \\
        [--hardware local-1t] [--allocations 8] [--repeat 5] [--top 8]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._ms_databases import database_folders  # noqa: E402
from storage.ms_database import records_by_task  # noqa: E402


def best_records(folder: str) -> list[Any]:
    """Each workload's valid record with the lowest mean run time."""
    return [records[0][1] for records in records_by_task(folder).values()]


def spread(tvm: Any, record: Any, target: Any, allocations: int, repeat: int,
           rng: np.random.Generator) -> dict[str, Any]:
    """The record's schedule built, then timed on `allocations` input sets: per set the median
    of `repeat` cache-flushed runs, in ms."""
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    sch = s_tir.Schedule(record.workload.mod)
    record.trace.apply_to_schedule(sch, remove_postproc=False)
    with tempfile.TemporaryDirectory() as scratch:
        artifact = os.path.join(scratch, "task.so")
        tvm.compile(sch.mod, target=target).export_library(artifact)
        lib = tvm.runtime.load_module(artifact)
    dev = tvm.cpu(0)
    infos = ms.arg_info.ArgInfo.from_prim_func(record.workload.mod["main"])
    held, medians = [], []
    for _ in range(allocations):
        # a spacer of 0-2 MiB first, kept alive, so each set starts somewhere else
        held.append(tvm.runtime.tensor(np.zeros(int(rng.integers(1, 2**19)), "float32"), dev))
        tensors = [tvm.runtime.tensor(rng.uniform(-1, 1, [int(d) for d in info.shape])
                                      .astype(str(info.dtype)), dev) for info in infos]
        held.append(tensors)
        evaluator = lib.time_evaluator("main", dev, number=1, repeat=repeat,
                                       f_preproc="cache_flush_cpu_non_first_arg")
        medians.append(statistics.median(evaluator(*tensors).results) * 1e3)
    shapes = [tuple(int(d) for d in info.shape) for info in infos]
    return {"shapes": shapes, "fastest": min(medians), "slowest": max(medians),
            "recorded": statistics.fmean(float(s) for s in record.run_secs) * 1e3}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", required=True, help="comma-separated database folders")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--allocations", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--top", type=int, default=8, help="tasks listed, slowest first")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.allocations < 2 or args.repeat < 1:
        raise SystemExit(f"--allocations {args.allocations} --repeat {args.repeat}: compare at "
                         "least 2 allocations, each timed at least once")
    folders = database_folders(args.database)

    from core.tvm_env import load_tvm
    from tasks.hardware import resolve_profile

    profile = resolve_profile(args.hardware)
    os.environ["TVM_NUM_THREADS"] = str(profile.num_threads)  # read when the pool starts
    tvm = load_tvm(profile.target)
    from tvm.target import Target

    target = Target(profile.target)
    rng = np.random.default_rng(args.seed)
    print(f"{profile.name}, {profile.num_threads} thread(s): each task's best record on "
          f"{args.allocations} input allocations, median of {args.repeat} cache-flushed runs "
          "each (ms per call)")
    for folder in folders:
        rows = [spread(tvm, r, target, args.allocations, args.repeat, rng)
                for r in best_records(folder)]
        rows.sort(key=lambda row: -row["slowest"])
        print(f"\n{Path(folder).name}: task (argument shapes) | recorded | fastest | slowest "
              "| slowest / fastest")
        for row in rows[:args.top]:
            shapes = " ".join("x".join(map(str, s)) for s in row["shapes"])
            print(f"  {shapes[:58]:58} | {row['recorded']:8.3f} | {row['fastest']:8.3f} | "
                  f"{row['slowest']:8.3f} | {row['slowest'] / row['fastest']:5.2f}")


if __name__ == "__main__":
    main()
