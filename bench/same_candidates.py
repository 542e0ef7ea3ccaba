"""How alike two hardware profiles time and rank the same candidates.

Collections with the same `--seed` and candidates per task sample the same schedules of a task
on every profile (the seed's CPU shards all use `--seed 0`, 32 a task), so a store holding two
profiles' rows has pairs: one schedule of one task, measured on both. This compares them:

- the ratio of their times (A / B), median and 10th-90th percentile, overall and per network;
- per task with at least --min-pairs pairs: Spearman's rank correlation of the two profiles'
  times, and whether both profiles' fastest pair is the same schedule.

What it says: how far a model trained on B's labels can carry to A. A constant ratio ranks
alike; a ratio that varies by task kind (compute-bound convolutions against memory-bound
elementwise work) reorders schedules, and the best of one chip is not always the other's.

    .venv/bin/python bench/same_candidates.py --db STORE --a PROFILE_A --b PROFILE_B \
        [--min-pairs 10] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.errors import TenforgeError  # noqa: E402

PAIRS_SQL = """
WITH m AS (
    SELECT DISTINCT h.name AS hardware, t.workload_hash, c.schedule_hash, v.mean_latency_s
    FROM v_measurements v
    JOIN candidates c USING (candidate_id)
    JOIN hardware h ON h.hardware_id = c.hardware_id
    JOIN tasks t ON t.task_id = c.task_id
    WHERE v.error_kind IS NULL AND v.mean_latency_s > 0 AND h.name IN (?, ?))
SELECT a.workload_hash, a.mean_latency_s, b.mean_latency_s
FROM m a JOIN m b ON a.schedule_hash = b.schedule_hash AND a.workload_hash = b.workload_hash
WHERE a.hardware = ? AND b.hardware = ?
"""
# A task's networks (one row each), to break the ratios down by network.
NETWORKS_SQL = """
SELECT DISTINCT t.workload_hash, n.name
FROM tasks t JOIN network_tasks nt USING (task_id) JOIN networks n USING (network_id)
"""


def ranks(values: np.ndarray) -> np.ndarray:
    """0-based ranks; equal values share the mean of their ranks."""
    order = np.argsort(values, kind="stable")
    ranked = np.empty(len(values))
    start = 0
    while start < len(values):
        end = start
        while end + 1 < len(values) and values[order[end + 1]] == values[order[start]]:
            end += 1
        ranked[order[start:end + 1]] = (start + end) / 2
        start = end + 1
    return ranked


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def compare(pairs: list[tuple[str, float, float]], min_pairs: int = 10) -> dict:
    """The comparison of (task, time on A, time on B) pairs: ratio quantiles, and per task with
    at least `min_pairs` pairs its rank correlation and whether the fastest is shared."""
    if not pairs:
        return {"pairs": 0, "tasks": 0}
    ratio = np.array([a / b for _, a, b in pairs])
    by_task: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task, a, b in pairs:
        by_task[task].append((a, b))
    rhos, same_best = [], 0
    for times in by_task.values():
        if len(times) < min_pairs:
            continue
        a, b = np.array(times).T
        rhos.append(spearman(a, b))
        same_best += int(np.argmin(a) == np.argmin(b))
    rhos = [r for r in rhos if r == r]  # nan: a task whose times on one side are all equal
    out = {"pairs": len(pairs), "tasks": len(by_task),
           "ratio": [float(np.quantile(ratio, q)) for q in (0.5, 0.1, 0.9)],
           "ranked_tasks": len(rhos), "same_best": same_best}
    if rhos:
        out["spearman"] = [float(np.median(rhos)), float(np.quantile(rhos, 0.1))]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a tenforge store holding both profiles")
    parser.add_argument("--a", required=True, help="profile A (the ratio is A / B)")
    parser.add_argument("--b", required=True, help="profile B")
    parser.add_argument("--min-pairs", type=int, default=10,
                        help="pairs a task needs to be ranked (default 10)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args(argv)
    import duckdb

    if not Path(args.db).is_file():
        raise SystemExit(f"no store at {args.db}: give --db a tenforge DuckDB file")
    con = duckdb.connect(args.db, read_only=True)
    known = {n for (n,) in con.execute("SELECT name FROM hardware").fetchall()}
    for name in (args.a, args.b):
        if name not in known:
            raise SystemExit(f"profile {name!r} is not in {args.db}; stored: "
                             f"{', '.join(sorted(known))}")
    pairs = con.execute(PAIRS_SQL, [args.a, args.b, args.a, args.b]).fetchall()
    if not pairs:
        raise SystemExit(f"{args.a} and {args.b} share no measured schedule in {args.db}: "
                         "collect both with the same --seed and candidates per task")
    networks: dict[str, list[str]] = defaultdict(list)
    for task, network in con.execute(NETWORKS_SQL).fetchall():
        networks[network].append(task)
    rows = [("all", compare(pairs, args.min_pairs))]
    for network in sorted(networks):
        tasks = set(networks[network])
        part = [p for p in pairs if p[0] in tasks]
        if part:
            rows.append((network, compare(part, args.min_pairs)))
    print(f"{args.a} against {args.b}: the same schedules, valid on both ({args.db})")
    header = ["networks", "pairs", "tasks", "time A / B: median (p10-p90)",
              f"tasks with >= {args.min_pairs} pairs", "rank corr. median (p10)",
              "same fastest"]
    print(f"| {' | '.join(header)} |" if args.markdown else "  ".join(header))
    if args.markdown:
        print(f"|{'|'.join('---' for _ in header)}|")
    for name, c in rows:
        ratio = "{:.2f} ({:.2f}-{:.2f})".format(*c["ratio"])
        rho = "{:.3f} ({:.3f})".format(*c["spearman"]) if "spearman" in c else "-"
        cells = [name, str(c["pairs"]), str(c["tasks"]), ratio, str(c["ranked_tasks"]), rho,
                 f"{c['same_best']} of {c['ranked_tasks']}"]
        print(f"| {' | '.join(cells)} |" if args.markdown else "  ".join(cells))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TenforgeError as error:
        raise SystemExit(str(error)) from None
