"""Per-task best measured times of two sets of MetaSchedule tuning databases, side by side.

A graph-level change (a layout, a fold) renames and rehashes tasks, so this matches them by
what they compute on: the shapes of their first two arguments (data, weight) and of their
output. Each side may be several databases (seeds): a task's time is the median over them of
its best valid measurement. Prints the tasks heaviest first, before -> after and the ratio,
and the sum of the matched tasks' bests (each task once, not weighted by occurrences: the
end-to-end time is the bench's other column).

    .venv/bin/python bench/task_bests.py BEFORE_DB[,BEFORE_DB...] AFTER_DB[,AFTER_DB...] [--top 20]

A database is a folder with MetaSchedule's database_workload.json and
database_tuning_record.json (a retune's or a tuning-matrix cell's); a record is failed as
storage.ms_database reads it (run_secs 1e10 or missing).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.ms_database import MS_DATABASE_FILES, MS_FAILED_RUN_SECS, open_json_database


def task_bests(folder: str) -> dict[tuple, float]:
    """{(data shape, weight shape, output shape): fastest run (of a record's run_secs) of its
    valid records} of one database."""
    database = open_json_database(Path(folder), create=False)
    from tvm.s_tir import meta_schedule as ms

    bests: dict[tuple, float] = {}
    for record in database.get_all_tuning_records():
        secs = [float(s) for s in record.run_secs or []]
        if not secs or any(s >= MS_FAILED_RUN_SECS for s in secs):  # as storage reads them
            continue
        seconds = min(secs)
        shapes = [tuple(int(d) for d in arg.shape)
                  for arg in ms.arg_info.ArgInfo.from_prim_func(record.workload.mod["main"])]
        key = (shapes[0], shapes[1], shapes[-1]) if len(shapes) >= 3 else tuple(shapes)
        bests[key] = min(bests.get(key, seconds), seconds)
    return bests


def median_bests(folders: list[str]) -> dict[tuple, float]:
    """The tasks every database has, each with the median of its bests."""
    each = [task_bests(folder) for folder in folders]
    common = set.intersection(*(set(bests) for bests in each))
    return {key: statistics.median(bests[key] for bests in each) for key in common}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="comma-separated database folders")
    parser.add_argument("after", help="comma-separated database folders")
    parser.add_argument("--top", type=int, default=20, help="tasks listed, heaviest first")
    args = parser.parse_args()
    for folder in (args.before + "," + args.after).split(","):
        missing = [name for name in MS_DATABASE_FILES if not (Path(folder) / name).is_file()]
        if missing:
            parser.error(f"{folder} is not a MetaSchedule database folder: {missing[0]} is missing")
    before = median_bests(args.before.split(","))
    after = median_bests(args.after.split(","))
    matched = sorted(set(before) & set(after), key=lambda key: -before[key])
    print(f"{len(before)} tasks before, {len(after)} after, {len(matched)} matched by shapes")
    print("before us -> after us  ratio  data shape, weight shape")
    for key in matched[:args.top]:
        print(f"{before[key] * 1e6:9.1f} -> {after[key] * 1e6:9.1f}  {after[key] / before[key]:.2f}"
              f"  {key[0]} {key[1]}")
    total_before = sum(before[key] for key in matched)
    total_after = sum(after[key] for key in matched)
    print(f"sum of the matched tasks' bests (each once): {total_before * 1e3:.3f} -> "
          f"{total_after * 1e3:.3f} ms ({total_after / total_before:.3f})")


if __name__ == "__main__":
    main()
