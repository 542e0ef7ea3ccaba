"""Per-task best measured times of two sets of MetaSchedule tuning databases, side by side.

A graph-level change (a layout, a fold) renames and rehashes tasks, so this matches them by
what they compute on: the shapes of their first two arguments (data, weight) and of their
output. Each side may be several databases (seeds): a task's time is the median over them of
its best valid measurement. Prints the tasks heaviest first, before -> after, the ratio and
the median count of valid measurements (how many trials each side spent on the task),
and the sum of the matched tasks' bests (each task once, not weighted by occurrences: the
end-to-end time is the bench's other column).

With --first N a task's time is the best of the first N valid measurements it got, in the order
they were measured: for a search that measures a model's top k of each task first, --first k is
what its first ranking picked, which decides its first whole-network estimate.

    .venv/bin/python bench/task_bests.py BEFORE_DB[,BEFORE_DB...] AFTER_DB[,AFTER_DB...] \
        [--top 20] [--first N]

A database is a folder with MetaSchedule's database_workload.json and
database_tuning_record.json (a retune's or a tuning-matrix cell's); a record is failed as
storage.ms_database reads it (run_secs 1e10 or missing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.ms_database import MS_DATABASE_FILES, records_as_measured, valid_secs


def task_runs(folder: str, first: int | None = None) -> dict[tuple, list[float]]:
    """{(data shape, weight shape, output shape): the fastest run (of a record's run_secs) of
    each valid record, in the order they were measured} of one database; with `first`, only
    each task's first `first` of them."""
    return {key: runs[:first] for key, (_, runs) in task_records(folder).items()}


def task_records(folder: str) -> dict[tuple, tuple[Any, list[float]]]:
    """{task shape key: (the first of its workloads' IRModules, the fastest run of each valid
    record, in the order they were measured)} of one database."""
    tasks: dict[tuple, tuple[Any, list[float]]] = {}
    keys: dict[int, tuple] = {}  # a database's records share one object per workload
    for workload, run_secs in records_as_measured(folder):
        secs = valid_secs(run_secs)  # the project's one check of a failed record
        if secs:
            if id(workload) not in keys:
                keys[id(workload)] = shape_key(workload.mod)
            tasks.setdefault(keys[id(workload)], (workload.mod, []))[1].append(min(secs))
    return tasks


def shape_key(mod: Any) -> tuple:
    """A task's name across graphs and databases: the shapes of its first two arguments (data,
    weight) and of its output (or all of them, where it has fewer than three)."""
    from tvm.s_tir import meta_schedule as ms

    shapes = [tuple(int(d) for d in arg.shape)
              for arg in ms.arg_info.ArgInfo.from_prim_func(mod["main"])]
    return (shapes[0], shapes[1], shapes[-1]) if len(shapes) >= 3 else tuple(shapes)


def task_bests(folder: str) -> dict[tuple, float]:
    """{task key: fastest run of its valid records} of one database."""
    return {key: min(seconds) for key, seconds in task_runs(folder).items()}


def median_bests(folders: list[str]) -> dict[tuple, float]:
    """The tasks every database has, each with the median of its bests."""
    return {key: best for key, (best, _) in median_summary(folders).items()}


def median_summary(folders: list[str], first: int | None = None
                   ) -> dict[tuple, tuple[float, float]]:
    """The tasks every database has, each with the median of its bests and the median count
    of its valid measurements: where a search lost a task, and whether it spent trials there.
    `first`: each task's best of its first `first` valid measurements only."""
    each = [task_runs(folder, first) for folder in folders]
    common = set.intersection(*(set(runs) for runs in each))
    return {key: (statistics.median(min(runs[key]) for runs in each),
                  statistics.median(len(runs[key]) for runs in each))
            for key in common}


def check_database_folders(parser: argparse.ArgumentParser, folders: list[str]) -> None:
    """Exit through `parser` with one line naming the first folder that lacks either of
    MetaSchedule's two database files."""
    for folder in folders:
        missing = [name for name in MS_DATABASE_FILES if not (Path(folder) / name).is_file()]
        if missing:
            parser.error(f"{folder} is not a MetaSchedule database folder: {missing[0]} is missing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="comma-separated database folders")
    parser.add_argument("after", help="comma-separated database folders")
    parser.add_argument("--top", type=int, default=20, help="tasks listed, heaviest first")
    parser.add_argument("--first", type=int, metavar="N",
                        help="a task's best of its first N valid measurements (the order they "
                             "were measured in) instead of all")
    args = parser.parse_args()
    if args.first is not None and args.first < 1:
        parser.error(f"--first must be a count of measurements, 1 or more (got {args.first})")
    check_database_folders(parser, (args.before + "," + args.after).split(","))
    before_summary = median_summary(args.before.split(","), args.first)
    after_summary = median_summary(args.after.split(","), args.first)
    before = {key: best for key, (best, _) in before_summary.items()}
    after = {key: best for key, (best, _) in after_summary.items()}
    matched = sorted(set(before) & set(after), key=lambda key: -before[key])
    if not matched:  # e.g. two networks' databases on one side: no task is in all of them
        raise SystemExit(f"no task is in every database of both sides ({len(before)} before, "
                         f"{len(after)} after): give each side databases of one network")
    print(f"{len(before)} tasks before, {len(after)} after, {len(matched)} matched by shapes")
    print("before us -> after us  ratio  measured before / after  data shape, weight shape")
    for key in matched[:args.top]:
        print(f"{before[key] * 1e6:9.1f} -> {after[key] * 1e6:9.1f}  {after[key] / before[key]:.2f}"
              f"  {before_summary[key][1]:6.0f} / {after_summary[key][1]:<6.0f}  {key[0]} {key[1]}")
    total_before = sum(before[key] for key in matched)
    total_after = sum(after[key] for key in matched)
    print(f"sum of the matched tasks' bests (each once): {total_before * 1e3:.3f} -> "
          f"{total_after * 1e3:.3f} ms ({total_after / total_before:.3f})")


if __name__ == "__main__":
    main()
