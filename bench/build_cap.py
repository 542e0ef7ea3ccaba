"""What a tuning run's build cap (tasks/measure/build_cap.py) would have cut of a store's data.

Every measurement keeps its build's seconds. Per hardware profile this applies the cap's rule,
max(floor, factor x the median build), with the profile's median build standing in for a run's
(a run's median is over its own latest builds), and prints: the builds it cuts, the build
seconds past the cap (what a search would no longer wait for, as the sum over the cut builds of
their time beyond it) against all build seconds, and what the cut candidates were worth: how
many were their task's fastest on that profile (a best lost), with how much slower the next
best was, and how many ran within 10% of the best.

    .venv/bin/python bench/build_cap.py --db STORE [--floor 10] [--factor 20] [--markdown]

Read it for the rule's cost in lost schedules; its gain is the rounds a search no longer
holds (the stalls are in the tuning logs: a batch's "Sending N sample(s) to builder" to its
"Sending N valid sample(s) to runner").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.reports import format_table, markdown_table  # noqa: E402
from tasks.measure.build_cap import FACTOR, FLOOR_S  # noqa: E402

# one row per (profile, task, candidate) measured without error, with its build seconds
VALID_BUILDS = """
    SELECT DISTINCT v.hardware, v.workload_hash, v.candidate_id, v.mean_latency_s AS latency,
           m.build_s AS build
    FROM v_measurements v JOIN measurements m USING (candidate_id)
    WHERE m.build_s IS NOT NULL AND m.error_kind IS NULL AND v.mean_latency_s > 0
"""

PER_PROFILE = """
    WITH b AS ({valid}),
    ranked AS (
        SELECT *, row_number() OVER w AS place,
               lead(latency) OVER w / latency AS next_ratio,
               latency / min(latency) OVER (PARTITION BY hardware, workload_hash) AS rel,
               median(build) OVER (PARTITION BY hardware) AS median_build
        FROM b WINDOW w AS (PARTITION BY hardware, workload_hash ORDER BY latency)),
    capped AS (SELECT *, greatest(?, ? * median_build) AS cap FROM ranked)
    SELECT hardware, any_value(median_build), any_value(cap), count(*),
           count(*) FILTER (WHERE build > cap),
           coalesce(sum(build - cap) FILTER (WHERE build > cap), 0), sum(build),
           count(*) FILTER (WHERE build > cap AND place = 1),
           list(round(next_ratio, 3)) FILTER (WHERE build > cap AND place = 1),
           count(*) FILTER (WHERE build > cap AND rel <= 1.1),
           count(DISTINCT workload_hash)
    FROM capped GROUP BY hardware ORDER BY hardware
"""

COLUMNS = ["profile", "median build s", "cap s", "builds", "cut", "build s past the cap",
           "of all build s", "bests lost (next best x slower)", "cut within 10% of best",
           "tasks"]


def rows(db: str, floor: float, factor: float) -> list[list[str]]:
    import duckdb

    with duckdb.connect(db, read_only=True) as con:
        found = con.execute(PER_PROFILE.format(valid=VALID_BUILDS), [floor, factor]).fetchall()
    out = []
    for hardware, median, cap, builds, cut, past, total, lost, ratios, near, tasks in found:
        lost_text = f"{lost}" + (f" ({', '.join(f'{r:.2f}' for r in ratios if r)})"
                                 if lost else "")
        out.append([hardware, f"{median:.2f}", f"{cap:.1f}", f"{builds:,}",
                    f"{cut} ({cut / builds:.2%})", f"{past:,.0f}", f"{past / total:.1%}",
                    lost_text, str(near), f"{tasks:,}"])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a tenforge store (DuckDB file)")
    parser.add_argument("--floor", type=float, default=FLOOR_S, help="the cap's floor, seconds")
    parser.add_argument("--factor", type=float, default=FACTOR,
                        help="the cap in multiples of the median build")
    parser.add_argument("--markdown", action="store_true", help="a Markdown table")
    args = parser.parse_args(argv)
    if not Path(args.db).is_file():
        raise SystemExit(f"--db {args.db}: no such store; give a tenforge DuckDB file")
    if args.floor <= 0 or args.factor <= 0:
        raise SystemExit(f"--floor {args.floor} and --factor {args.factor} must be > 0")
    table = rows(args.db, args.floor, args.factor)
    print(f"build cap max({args.floor:g} s, {args.factor:g}x the profile's median build), "
          f"applied to {args.db}'s valid measurements")
    print((markdown_table if args.markdown else format_table)(COLUMNS, table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
