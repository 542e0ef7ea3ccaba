"""What the resource-constraint rules (tasks.constraints) would have dropped from the seed.

For every hardware profile in the store, grouped by ISA family: re-derive each measured
candidate's schedule from its trace, ask the profile's rules, and compare what they reject with
the measured labels (label = task's best latency / candidate's latency; 1 = the task's best).
A good rule rejects many candidates, with low labels, and never a task's best. The rule's
threshold was chosen by looking at the tasks with an even task id on the AVX2 profile;
`--tasks odd` is the held-out check.

    .venv/bin/python bench/constraints.py [--db STORE] [--tasks all|even|odd] [--per-task 64]
        [--hardware P1,P2]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from core.tvm_env import load_tvm  # noqa: E402
from storage.reports import format_table  # noqa: E402
from storage.seed import load_shards  # noqa: E402
from storage.store import Store  # noqa: E402
from tasks.constraints import first_rejection, isa_family, rules_for_target  # noqa: E402

PARITY = {"all": "TRUE", "even": "t.task_id % 2 = 0", "odd": "t.task_id % 2 = 1"}


def candidates(store: Store, hardware: str, tasks: str, per_task: int) -> list[tuple]:
    """(task_id, label, trace_json, mod_json) of up to `per_task` measured candidates of each
    task with at least 8 successful ones."""
    return store.query(f"""
        WITH ok AS (
            SELECT c.task_id, c.candidate_id, c.trace_json, m.mean_latency_s AS latency,
                   row_number() OVER (PARTITION BY c.task_id ORDER BY c.candidate_id) AS n
            FROM measurements m JOIN candidates c USING (candidate_id)
            JOIN hardware h USING (hardware_id)
            WHERE m.error_kind IS NULL AND h.name = ?),
        best AS (SELECT task_id, min(latency) AS best FROM ok GROUP BY 1 HAVING count(*) >= 8)
        SELECT t.task_id, best.best / ok.latency, ok.trace_json, t.mod_json
        FROM ok JOIN best USING (task_id) JOIN tasks t USING (task_id)
        WHERE ok.n <= ? AND {PARITY[tasks]} ORDER BY t.task_id""", [hardware, per_task])


def judge(rows: list[tuple], rules: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Task ids, labels, rejected flags, and seconds per candidate to re-derive and judge."""
    tvm = load_tvm("llvm")
    from tvm import s_tir

    modules: dict[int, object] = {}
    rejected = []
    start = time.perf_counter()
    for task_id, _, trace_json, mod_json in rows:
        if task_id not in modules:
            modules[task_id] = tvm.ir.load_json(mod_json)
        sch = s_tir.Schedule(modules[task_id])
        s_tir.schedule.Trace.apply_json_to_schedule(json.loads(trace_json), sch)
        rejected.append(first_rejection(rules, sch.mod["main"]) is not None)
    per_candidate = (time.perf_counter() - start) / max(len(rows), 1)
    return (np.array([r[0] for r in rows]), np.array([r[1] for r in rows], dtype=float),
            np.array(rejected, dtype=bool), per_candidate)


def summarize(hardware: str, rules: list, task: np.ndarray, label: np.ndarray,
              rejected: np.ndarray) -> tuple:
    tasks = np.unique(task)
    for t in tasks:  # relative to the best judged candidate (the cap may leave the real best out)
        label[task == t] /= label[task == t].max()
    lost_best = sum(bool((rejected & (task == t) & (label >= 0.999)).any()) for t in tasks)
    lost_top = sum(bool((rejected & (task == t) & (label >= 0.9)).any()) for t in tasks)
    # the best latency left per task, relative to the real best (1 = nothing lost)
    kept_best = [label[(task == t) & ~rejected].max(initial=0.0) for t in tasks]
    dropped = label[rejected]
    return (hardware, ", ".join(map(str, rules)) or "(none)", len(tasks), len(label),
            f"{rejected.mean():.1%}",
            f"{np.median(dropped):.3f}" if dropped.size else "-", f"{np.median(label):.3f}",
            f"{np.quantile(dropped, 0.9):.3f}" if dropped.size else "-",
            lost_best, lost_top, f"{min(kept_best):.3f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store (default: the seed, loaded into a temp store)")
    parser.add_argument("--tasks", choices=sorted(PARITY), default="all")
    parser.add_argument("--per-task", type=int, default=64)
    parser.add_argument("--hardware", help="comma-separated profiles (default: every one in the "
                        "store)")
    args = parser.parse_args()
    db = args.db or str(scratch_dir("constraints") / "seed.duckdb")
    if args.db is None:
        load_shards(db, progress=lambda _: None)
    rows = []
    with Store(db, read_only=True) as store:
        profiles = store.query("SELECT name, target_kind, features_json FROM hardware "
                               "ORDER BY name")
        wanted = set(args.hardware.split(",")) if args.hardware else None
        for name, kind, features_json in profiles:
            if wanted is not None and name not in wanted:
                continue
            features = json.loads(features_json)
            # every rule, also where it is off by default: this is where the evidence comes from
            rules = rules_for_target(kind, features, only_validated=False)
            on = rules_for_target(kind, features)
            found = candidates(store, name, args.tasks, args.per_task)
            if not found:
                continue
            task, label, rejected, seconds = judge(found, rules)
            print(f"{name}: judged {len(found)} candidates at {seconds * 1e3:.1f} ms each "
                  "(re-deriving the schedule included)", flush=True)
            rows.append((isa_family(kind, features), *summarize(name, rules, task, label,
                                                                rejected),
                         "on" if on else "off"))
    print(f"\nTasks: {args.tasks}; up to {args.per_task} measured candidates per task. "
          "label = task's best latency / candidate's latency.")
    print(format_table(["ISA", "hardware", "rules", "tasks", "candidates", "rejected",
                        "median label rejected", "median label all", "p90 label rejected",
                        "tasks whose best was rejected", "tasks losing one >= 0.9",
                        "worst best-kept", "default"], sorted(rows)))
    families = {r[0] for r in rows}
    missing = sorted({"avx512", "avx2", "sse42"} - families)
    if missing:
        print(f"No data for ISA families {', '.join(missing)} in this store: collect on such a "
              "machine (`tenforge collect --hardware local-1t`) and load its shards.")


if __name__ == "__main__":
    main()
