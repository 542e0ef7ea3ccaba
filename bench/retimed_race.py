"""Issue 15's search-time speedup with the two searches' picks timed side by side.

    .venv/bin/python bench/retimed_race.py --out docs/tuning-matrix/FOLDER --work WORK \
        --network bert --seeds 0,1,2,3 [--variant V] [--processes 3] [--json PATH] [--markdown]

A cell's curve is its own estimate: the sum over tasks of occurrences x the best mean run time
it recorded. The baseline (MetaSchedule's XGB) and the learned search of a seed run one after
the other, an hour apart, and some hosts drift 1.5x within an hour (the 105 MiB Xeon, session
86): which search reaches the other's final estimate first is then partly which ran on the
faster hour. Here every program either search held as a task's best at any point of its curve
is timed again, both cells' programs together in fresh processes (tenforge's Measurer,
MetaSchedule's 10 repeats), interleaved task by task, the order reversed in every other process
(a drift that is linear in time hits both cells alike), and each program's re-timed latency is
the median over processes. The picks at each point of a curve are what the search had chosen
then (from its own readings); their re-timed sum is that point's re-timed estimate.

The race is then the report's (bench/tuning_matrix.py `pair_speedup`), on re-timed curves:
the baseline's target is the re-timed estimate of its final picks (what it delivers), its
time is when its re-timed curve first got there, and the learned search's speedup is that time
over the time its re-timed curve first got there ("never" if it did not). A re-timed curve can
rise, so the race is also run "for good" (`stays`): from the point after which a curve never
rose above the target again. The recorded race is printed beside both from the same replay, a
check that the replay matches the report.

The cells' databases must still be in WORK (`--work` of the tuning-matrix run:
WORK/databases/NETWORK-VARIANT-sSEED), and the cells must have run on this machine's profile.
Each replay is checked against the cell's recorded curve before anything is timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from itertools import zip_longest
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import ratio_spread  # noqa: E402
from bench.pooled_baselines import default_variant, report_cells  # noqa: E402
from bench.tuning_matrix import baseline_of, reach  # noqa: E402
from storage.reports import format_table, markdown_table  # noqa: E402

REPLAY_TOLERANCE = 1e-4  # relative: run seconds are stored as float32
MS_RUNNER_FLOPS = 1.0  # below 2.1 MFLOP the Measurer repeats 10 times, as MetaSchedule's runner


def replay(rows: Sequence[tuple[str, float | None]], weights: dict[str, float],
           at: Sequence[int]) -> dict[int, tuple[float | None, dict[str, int]]]:
    """Replay a cell's records in the order it committed them: `rows` are (task, mean run
    seconds or None for a failed one). For each trial count in `at`: (the estimate then,
    {task: index of the row that was its best}); the estimate is None until every task of
    `weights` has a valid row. Ties keep the earlier row, as a best-so-far does."""
    best: dict[str, tuple[float, int]] = {}
    wanted = sorted(set(at))
    out = {}
    for count in range(len(rows) + 1):
        if wanted and count == wanted[0]:
            wanted.pop(0)
            done = all(task in best for task in weights)
            estimate = sum(w * best[t][0] for t, w in weights.items()) if done else None
            out[count] = (estimate, {t: i for t, (_, i) in best.items()})
        if count < len(rows):
            task, secs = rows[count]
            if secs is not None and (task not in best or secs < best[task][0]):
                best[task] = (secs, count)
    if wanted:
        raise SystemExit(f"the curve names trial {wanted[0]}, but the database holds only "
                         f"{len(rows)} records: pass the cell's own database (--work)")
    return out


def check_replay(name: str, curve: Sequence[Sequence[float]],
                 replayed: dict[int, tuple[float | None, dict[str, int]]]) -> None:
    """Refuse a replay whose estimates differ from the cell's recorded curve (another run's
    database, records in another order, other task weights)."""
    for trials, _, estimate_ms in curve:
        got = replayed[int(trials)][0]
        if got is None or abs(got * 1e3 - estimate_ms) > REPLAY_TOLERANCE * estimate_ms:
            shown = "no estimate" if got is None else f"{got * 1e3:.4f} ms"
            raise SystemExit(f"{name}: replaying its database gives {shown} at trial "
                             f"{int(trials)}, its curve says {estimate_ms:.4f} ms: the "
                             "database is not the one this cell wrote (--work)")


def retimed_curve(curve: Sequence[Sequence[float]],
                  replayed: dict[int, tuple[float | None, dict[str, int]]],
                  weights: dict[str, float], retimed: dict[int, float]) -> list[list[float]]:
    """[trials, wall s, re-timed estimate ms] at each point of `curve`: the picks then, each at
    its re-timed seconds (`retimed`: row index -> seconds). A point with a pick that failed in
    every round of re-timing is left out; without the last point there is no race (an error)."""
    out = []
    for trials, wall, _ in curve:
        picks = replayed[int(trials)][1]
        if all(picks[t] in retimed for t in weights):
            out.append([trials, wall,
                        1e3 * sum(w * retimed[picks[t]] for t, w in weights.items())])
    if not out or out[-1][0] != curve[-1][0]:
        raise SystemExit(f"a final pick (trial {int(curve[-1][0])}) failed in every round of "
                         "re-timing: no re-timed final estimate")
    return out


def stays(points: Sequence[Sequence[float]], latency_ms: float) -> float | None:
    """Wall s of the first point from which `points` never rise above `latency_ms` again;
    None if the last one is above it. A re-timed curve can rise (a later pick read faster in
    the search and slower here), so this is stricter than `reach`, and less of a lottery: one
    low reading anywhere along a curve is enough to reach."""
    at = None
    for _, wall, est in reversed(points):
        if est > latency_ms * (1 + 1e-9):
            break
        at = wall
    return at


def race(base: Sequence[Sequence[float]], cell: Sequence[Sequence[float]],
         budget: int) -> dict[str, Any]:
    """The search-time race on two curves of [trials, wall s, estimate ms] (recorded or
    re-timed): the baseline's final estimate within `budget` trials (its last point there), the
    seconds each curve took to first get there, and the speedup (None: the cell never did);
    the same with `stays`. On a recorded (falling) curve both are `pair_speedup`'s race."""
    within = [p for p in base if p[0] <= budget]
    final = within[-1][2]
    base_s = reach(base, final)[1]
    got = reach(cell, final)  # over the whole curve, as the report's pair_speedup
    base_stays, cell_stays = stays(within, final), stays(cell, final)
    return {"target_ms": final, "base_s": base_s, "cell_s": None if got is None else got[1],
            "speedup": None if got is None else base_s / max(got[1], 1e-9),
            "base_stays_s": base_stays, "cell_stays_s": cell_stays,
            "stays_speedup": None if cell_stays is None else base_stays / max(cell_stays, 1e-9),
            "cell_final_ms": cell[-1][2]}


def side_by_side_order(programs: Sequence[tuple[str, str, int]],
                       rank: dict[str, float]) -> list[int]:
    """Indices into `programs` ((cell, task, row)) in timing order: tasks by `rank` (heaviest
    first), and within a task the two cells' programs alternately."""
    by_task: dict[str, dict[str, list[int]]] = {}
    for i, (cell, task, _) in enumerate(programs):
        by_task.setdefault(task, {}).setdefault(cell, []).append(i)
    order = []
    for task in sorted(by_task, key=lambda t: -rank.get(t, 0.0)):
        lists = list(by_task[task].values())
        order += [i for group in zip_longest(*lists) for i in group if i is not None]
    return order


def time_side_by_side(count: int, order: list[int], processes: int,
                      measure: Callable[[list[int]], list[float | None]],
                      report: Callable[[str], None] = print) -> dict[int, list[float]]:
    """Each program's re-timed seconds from `processes` rounds of `measure` (one fresh
    measuring process a round, given program indices, returns seconds or None for a failure),
    the order reversed in every other round. A program that failed in every round is left
    out."""
    readings: list[list[float]] = [[] for _ in range(count)]
    for round_ in range(processes):
        this = order if round_ % 2 == 0 else order[::-1]
        started = time.monotonic()
        for i, secs in zip(this, measure(this)):
            if secs is not None:
                readings[i].append(secs)
        report(f"  round {round_ + 1}/{processes}: {len(this)} programs in "
               f"{time.monotonic() - started:.0f} s")
    return {i: r for i, r in enumerate(readings) if r}


def database_rows(folder: Path, load_workload: Callable[[list], tuple[str, Any]]
                  ) -> tuple[list, list]:
    """A cell's database in commit order: [(task, mean run seconds or None)] and
    [(workload, record JSON)] beside them. `load_workload` turns a workload line into (its
    task key, the workload), once per line of the workload file."""
    from storage.ms_database import RECORD_FILE, WORKLOAD_FILE, valid_secs

    if not (folder / RECORD_FILE).is_file():
        raise SystemExit(f"{folder}: no MetaSchedule database there: pass the tuning-matrix "
                         "run's --work folder, whose databases/ still holds the cells")
    workloads = [load_workload(json.loads(line)) for line in open(folder / WORKLOAD_FILE)]
    rows, lines = [], []
    for line in open(folder / RECORD_FILE):
        if not line.strip():
            continue
        index, record = json.loads(line)
        secs = valid_secs(record[1])
        task, workload = workloads[index]
        rows.append((task, sum(secs) / len(secs) if secs else None))
        lines.append((workload, record))
    return rows, lines


def measure_in_fresh_process(profile: Any, jobs: list[Any]) -> Callable:
    """`time_side_by_side`'s measure: a new Measurer (its own worker processes) each round."""
    from tasks.measure import Measurer

    def measure(order: list[int]) -> list[float | None]:
        with Measurer(profile) as measurer:
            results = measurer.measure([jobs[i] for i in order])
        return [sum(r.run_secs) / len(r.run_secs) if r.run_secs else None for r in results]

    return measure


def seed_race(cells: dict[str, dict[str, Any]], work: Path, weights: dict[str, float],
              processes: int, profile: Any) -> dict[str, Any]:
    """Replay, check, re-time and race one seed's two cells ({"base": cell, "cell": cell})."""
    from core.records import MeasureJob
    from core.tvm_env import load_tvm, structural_hash_hex, trace_json

    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    def load_workload(workload_json: list) -> tuple[str, Any]:
        workload = ms.database.Workload.from_json(workload_json)
        return structural_hash_hex(workload.mod), workload

    replays, lines, programs, rank = {}, {}, {}, {}
    for role, cell in cells.items():
        name = f"{cell['network']}-{cell['variant']}-s{cell['seed']}"
        rows, lines[role] = database_rows(work / "databases" / name, load_workload)
        replays[role] = replay(rows, weights, [int(p[0]) for p in cell["curve"]])
        check_replay(name, cell["curve"], replays[role])
        for _, picks in replays[role].values():
            for task, row in picks.items():
                programs[(role, task, row)] = None
        if role == "base":  # time the heaviest tasks first: by the baseline's final picks
            final_picks = replays[role][int(cell["curve"][-1][0])][1]
            rank = {t: w * rows[final_picks[t]][1] for t, w in weights.items()}
    keys = list(programs)
    jobs = []
    for i, (role, task, row) in enumerate(keys):
        workload, record_json = lines[role][row]
        record = ms.database.TuningRecord.from_json(record_json, workload)
        jobs.append(MeasureJob(i, task, tvm.ir.save_json(workload.mod),
                               trace_json(record.trace), MS_RUNNER_FLOPS))
    counts = ", ".join(f"{role} {sum(k[0] == role for k in keys)}" for role in cells)
    print(f"  {len(keys)} programs held as a task's best at some point ({counts}); "
          f"{processes} fresh processes", flush=True)
    readings = time_side_by_side(len(keys), side_by_side_order(keys, rank), processes,
                                 measure_in_fresh_process(profile, jobs))
    retimed = {i: statistics.median(r) for i, r in readings.items()}
    by_role = {role: {row: retimed[i] for i, (r, _, row) in enumerate(keys)
                      if r == role and i in retimed} for role in cells}
    curves = {role: retimed_curve(cells[role]["curve"], replays[role], weights, by_role[role])
              for role in cells}
    budget = cells["base"]["trials_budget"]
    # how far one program's readings moved between rounds: the re-timing's own noise
    rounds_spread = statistics.median(max(r) / min(r) for r in readings.values())
    return {"programs": len(keys), "timed": len(retimed), "rounds_spread": rounds_spread,
            "recorded": race(cells["base"]["curve"], cells["cell"]["curve"], budget),
            "retimed": race(curves["base"], curves["cell"], budget),
            "retimed_curves": curves}


def task_weights(network: str, graph: str, profile: Any) -> dict[str, float]:
    """{task: occurrences} of `network` on `graph`, as the cells' estimates weigh them."""
    from core.tvm_env import load_tvm
    from tasks.tuning.hold import occurrences
    from tasks.workloads import import_to_relax

    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    return occurrences(ms.relax_integration.extract_tasks(
        import_to_relax(network, 1, None, graph), tvm.target.Target(profile.target)))


def seed_pairs(cells: list[dict[str, Any]], variant: str, seeds: Sequence[int],
               profile_name: str) -> dict[int, dict[str, dict[str, Any]]]:
    """{seed: {"base": baseline cell, "cell": `variant`'s cell}}; one-line errors for a seed
    without both, or cells another profile ran."""
    baseline = baseline_of(variant, {c["variant"] for c in cells})
    by_key = {(c["variant"], c["seed"]): c for c in cells}
    pairs = {}
    for seed in seeds:
        pair = {"base": by_key.get((baseline, seed)), "cell": by_key.get((variant, seed))}
        missing = [v for v, c in zip((baseline, variant), pair.values()) if c is None]
        if missing:
            raise SystemExit(f"seed {seed}: no cell of {' or '.join(missing)} in the report: "
                             f"its seeds are {sorted({c['seed'] for c in cells})}")
        for c in pair.values():
            if c["hardware"] != profile_name:
                raise SystemExit(f"{c['variant']} s{seed} ran on {c['hardware']}, this machine "
                                 f"is {profile_name}: re-time cells on the machine they ran on")
        pairs[seed] = pair
    return pairs


HEADER = ["seed", "recorded: baseline final est. ms (s to it)", "learned reaches it (s)",
          "speedup", "re-timed: baseline final ms (s to it)", "learned reaches it (s)",
          "speedup", "re-timed, for good: baseline s, learned s", "speedup",
          "re-timed finals learned / baseline", "rounds' spread"]


def seconds(value: float | None) -> str:
    return "never" if value is None else f"{value:.0f}"


def times(value: float | None) -> str:
    return "never" if value is None else f"{value:.2f}x"


def table_row(seed: Any, result: dict[str, Any]) -> list[str]:
    cells = [str(seed)]
    for kind in ("recorded", "retimed"):
        r = result[kind]
        cells += [f"{r['target_ms']:.2f} ({r['base_s']:.0f})", seconds(r["cell_s"]),
                  times(r["speedup"])]
    r = result["retimed"]
    return cells + [f"{seconds(r['base_stays_s'])}, {seconds(r['cell_stays_s'])}",
                    times(r["stays_speedup"]), f"{r['cell_final_ms'] / r['target_ms']:.3f}",
                    f"{result['rounds_spread']:.3f}"]


def table_rows(results: dict[int, dict[str, Any]]) -> list[list[str]]:
    """A row per seed and the medians (a "never" ranks below every speedup: ratio_spread)."""
    runs = list(results.values())
    finals = [r["retimed"]["cell_final_ms"] / r["retimed"]["target_ms"] for r in runs]
    return [table_row(seed, r) for seed, r in results.items()] + [
        ["median", "", "", ratio_spread([r["recorded"]["speedup"] for r in runs]),
         "", "", ratio_spread([r["retimed"]["speedup"] for r in runs]),
         "", ratio_spread([r["retimed"]["stays_speedup"] for r in runs]),
         f"{statistics.median(finals):.3f}",
         f"{statistics.median(r['rounds_spread'] for r in runs):.3f}"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True,
                        help="the tuning-matrix report folder whose cells to re-time")
    parser.add_argument("--work", type=Path, required=True,
                        help="that run's --work folder (its databases/ hold the cells' records)")
    parser.add_argument("--network", required=True)
    parser.add_argument("--seeds", required=True, help="comma-separated, e.g. 0,1,2")
    parser.add_argument("--variant", help="the learned search's cell variant (default: the "
                        "default learned search on the report's graph)")
    parser.add_argument("--processes", type=int, default=3,
                        help="fresh measuring processes (rounds) per seed (default 3)")
    parser.add_argument("--hardware", default="local-1t",
                        help="this machine's profile; the cells must have run on it")
    parser.add_argument("--json", type=Path, help="write every figure and re-timed curve here")
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    args = parser.parse_args(argv)
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise SystemExit(f"--seeds {args.seeds!r}: expected comma-separated integers, e.g. "
                         "0,1,2") from None
    if args.processes < 1:
        raise SystemExit(f"--processes {args.processes}: expected 1 or more")
    from tasks.hardware import resolve_profile

    cells = report_cells(args.out, args.network)
    variant = args.variant or default_variant([cells])
    profile = resolve_profile(args.hardware)
    pairs = seed_pairs(cells, variant, seeds, profile.name)
    graph = pairs[seeds[0]]["base"]["graph"]
    print(f"re-timing {args.network} ({graph}) on {profile.name}: {variant} against "
          f"{pairs[seeds[0]]['base']['variant']}, seeds {seeds}", flush=True)
    weights = task_weights(args.network, graph, profile)
    results = {}
    for seed, pair in pairs.items():
        print(f"seed {seed}:", flush=True)
        results[seed] = seed_race(pair, args.work, weights, args.processes, profile)
    print((markdown_table if args.markdown else format_table)(HEADER, table_rows(results)))
    if args.json:
        args.json.write_text(json.dumps({
            "network": args.network, "variant": variant, "hardware": profile.name,
            "processes": args.processes, "report": str(args.out),
            "seeds": {str(s): r for s, r in results.items()}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
