"""Where two sets of tuning databases spent a task's trials, split by innermost tile factor.

    .venv/bin/python bench/tile_groups.py BEFORE_DB[,BEFORE_DB...] AFTER_DB[,AFTER_DB...] \
        [--top 3]

For the `--top` tasks the after side did worst on against the before side (the ratio of the
median over databases of each task's best, tasks matched by shapes as bench/task_bests.py
matches them), each side's valid measurements of the task are split by their tile group
(models/tile_mix.py: the innermost factor of the program's last spatial tile, the loop the CPU
vectorizes), pooled over the side's databases: how many, the best, the fifth best and the median
run time, and the share of the side's measurements outside its most measured group. Session 108
found this way that the learned search put 96% of a pointwise convolution's trials on 16-lane
blocks where MetaSchedule's XGB settled on 8 lanes (docs/tuning-results.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.task_bests import check_database_folders, median_summary, shape_key  # noqa: E402
from models.tile_mix import json_group  # noqa: E402
from storage.ms_database import traced_records, valid_secs  # noqa: E402

FIFTH = 5  # a group's k-th best: whether its best was a lone find or one of several


def task_groups(folder: str) -> dict[tuple, list[tuple[int | None, float]]]:
    """{task shape key: [(tile group, fastest run), ...] of its valid records} of a database."""
    tasks: dict[tuple, list[tuple[int | None, float]]] = {}
    keys: dict[int, tuple] = {}  # a database's records share one object per workload
    for workload, trace, run_secs in traced_records(folder):
        secs = valid_secs(run_secs)
        if secs:
            if id(workload) not in keys:
                keys[id(workload)] = shape_key(workload.mod)
            tasks.setdefault(keys[id(workload)], []).append((json_group(trace), min(secs)))
    return tasks


def group_rows(measured: list[tuple[int | None, float]]) -> list[tuple]:
    """(group, count, best, k-th best, median) of each group of `measured`, most measured
    first; a group with fewer than FIFTH measurements has no k-th best (None)."""
    by_group: dict[int | None, list[float]] = {}
    for group, secs in measured:
        by_group.setdefault(group, []).append(secs)
    rows = []
    for group, times in sorted(by_group.items(), key=lambda item: -len(item[1])):
        times.sort()
        rows.append((group, len(times), times[0], times[FIFTH - 1] if len(times) >= FIFTH
                     else None, statistics.median(times)))
    return rows


def outside_share(measured: list[tuple[int | None, float]]) -> float:
    """The share of `measured` outside its most measured group."""
    counts = Counter(group for group, _ in measured)
    return 1 - counts.most_common(1)[0][1] / len(measured) if measured else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="comma-separated database folders")
    parser.add_argument("after", help="comma-separated database folders")
    parser.add_argument("--top", type=int, default=3,
                        help="tasks shown, the after side's worst ratio first")
    args = parser.parse_args()
    if args.top < 1:
        parser.error(f"--top must be a count of tasks, 1 or more (got {args.top})")
    sides = {"before": args.before.split(","), "after": args.after.split(",")}
    check_database_folders(parser, sides["before"] + sides["after"])
    bests = {side: median_summary(folders) for side, folders in sides.items()}
    matched = set(bests["before"]) & set(bests["after"])
    if not matched:
        raise SystemExit("no task is in every database of both sides: give each side databases "
                         "of one network")
    ratio = {key: bests["after"][key][0] / bests["before"][key][0] for key in matched}
    groups = {side: [task_groups(folder) for folder in folders]
              for side, folders in sides.items()}
    for key in sorted(matched, key=lambda k: -ratio[k])[:args.top]:
        print(f"\n{key[0]} {key[1]}: median best {bests['before'][key][0] * 1e6:.1f} -> "
              f"{bests['after'][key][0] * 1e6:.1f} us ({ratio[key]:.2f})")
        for side in sides:
            measured = [pair for task in groups[side] for pair in task.get(key, [])]
            print(f"  {side}: {len(measured)} valid over {len(sides[side])} databases, "
                  f"{outside_share(measured):.0%} outside its most measured group")
            for group, count, best, kth, median in group_rows(measured):
                kth_text = f"{kth * 1e6:8.1f}" if kth is not None else "       -"
                print(f"    innermost {str(group):>4}: {count:4d} measured, best "
                      f"{best * 1e6:8.1f} us, 5th {kth_text}, median {median * 1e6:8.1f}")


if __name__ == "__main__":
    main()
