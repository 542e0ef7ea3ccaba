"""Graph-level levers (issue 15, item 6): how a network's graph is prepared before tuning.

For each network and seed, in one run, MetaSchedule's own XGB tunes the network prepared each
way of core.graphs.GRAPHS, with the same trial budget, seed and hardware profile:
  exported  as torch.export gives it (weights are inputs; what depends on them alone, such as
            batch norm's sqrt(var + eps) and the linear layers' weight transposes, runs in
            every inference), the way every seed task was made;
  folded    that weight-only work done once, at load; operators after a convolution then fuse
            into it;
  nhwc      folded, with convolutions in NHWC.
  G:exact   graph G as it was before tasks/fast_math.py: exp, erf and tanh (softmax, GELU,
            sigmoid, SiLU) a C library call an element instead of TOPI's polynomials; the
            table's "vs exact" is G's tuned latency against it (nchw16c,nchw16c:exact).
MetaSchedule's XGB learns from scratch in each cell, so no model trained on one graph's
tasks favours it. After the searches, every tuned network is timed again end to end in
interleaved rounds (exported, folded, nhwc, exported, ...), so a busy neighbour slows each
alike; the table reports the median of the rounds' medians and each graph's ratio to
"exported", with PyTorch eager at the same thread count (a fresh process).

    taskset -c 0 .venv/bin/python bench/graph_levers.py [--networks resnet18]
        [--graphs exported,folded,nhwc] [--seeds 0] [--trials 300] [--hardware local-1t]
        [--rounds 5] [--out bench/out/graph-levers]

Cells are kept as JSON under --out (a rerun skips finished cells; --retime-only times them
again); the tuning databases under --out/databases.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench.cpu_contention import busy_share, other_cpu_ticks  # noqa: E402
from bench.tuning import torch_eager_ms_fresh  # noqa: E402
from core.graphs import FAST_MATH_GRAPHS, GRAPHS, check_graph  # noqa: E402
from core.tvm_env import load_tvm, tvm_version  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.measure import Measurer  # noqa: E402
from tasks.tuning import tune_network  # noqa: E402
from tasks.workloads import exact_math, import_to_relax  # noqa: E402

EXACT = ":exact"  # a graph label's suffix: prepared with the C library's exp, erf and tanh


def base_graph(graph: str) -> str:
    """The prepared graph (GRAPHS) a graph label of --graphs names."""
    return graph.removesuffix(EXACT)


def preparing(graph: str) -> tuple[str, Any]:
    """(the prepared graph, a context to prepare it in) for a graph label of --graphs."""
    return base_graph(graph), exact_math() if graph.endswith(EXACT) else contextlib.nullcontext()


def check_label(graph: str) -> None:
    base = base_graph(graph)
    check_graph(base, prepared=True)
    if graph.endswith(EXACT) and base not in FAST_MATH_GRAPHS:
        raise SystemExit(f"--graphs {graph}: only {', '.join(FAST_MATH_GRAPHS)} compute with "
                         f"fast approximations, so only they have an {EXACT} form")


def cell_name(network: str, graph: str, seed: int) -> str:
    return f"{network}-{graph.replace(':', '-')}-s{seed}"


def tune_cell(network: str, graph: str, seed: int, args: argparse.Namespace, out: Path) -> dict:
    profile = resolve_profile(args.hardware)
    database = out / "databases" / cell_name(network, graph, seed)
    shutil.rmtree(database, ignore_errors=True)  # a cell starts over
    before = other_cpu_ticks()
    prepared, context = preparing(graph)
    with context:
        result = tune_network(network, profile, database, trials=args.trials,
                              minutes=args.minutes, cost_model="xgb", flops_share=1.0,
                              seed=seed, graph=prepared,
                              report=lambda line: print(f"  [{network} {graph} s{seed}] {line}",
                                                        flush=True))
    cell = {
        "network": network, "graph": graph, "seed": seed, "hardware": profile.name,
        "target": profile.target, "threads": profile.num_threads, "trials": result.trials,
        "tvm": tvm_version(), "tasks_total": result.tasks_total,
        "search_s": round(result.search_s, 1), "stop_reason": result.stop_reason,
        "estimated_ms": None if result.estimated_s is None else result.estimated_s * 1e3,
        "untuned_ms": result.untuned["latency_s"] * 1e3,
        "tuned_ms": result.tuned["latency_s"] * 1e3,
        "functions": {k: result.tuned[k] for k in ("tuned_functions", "tir_functions")},
        "curve": [asdict(p) for p in result.curve],
        "database": str(database), "other_cpus_busy": busy_share(before, other_cpu_ticks()),
    }
    return cell


def retime(cells: list[dict], args: argparse.Namespace) -> None:
    """Time every cell's tuned network again, round-robin, `args.rounds` times; stores each
    cell's per-round medians under "retimed_ms"."""
    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    modules = {}
    for c in cells:
        prepared, context = preparing(c["graph"])
        with context:
            modules[id(c)] = tvm.ir.save_json(import_to_relax(c["network"], 1, None, prepared))
    for c in cells:
        c["retimed_ms"] = []
    before = other_cpu_ticks()
    with Measurer(profile) as measurer:
        for r in range(args.rounds):
            for c in cells:
                run = measurer.run_network(modules[id(c)], c["database"], repeat=20)
                c["retimed_ms"].append(float(np.median(run["run_secs"])) * 1e3)
            print(f"retime round {r + 1}/{args.rounds}: " + ", ".join(
                f"{c['network']}/{c['graph']}/s{c['seed']} {c['retimed_ms'][-1]:.2f}"
                for c in cells), flush=True)
    share = busy_share(before, other_cpu_ticks())
    for c in cells:
        c["retime_other_cpus_busy"] = share


def report(cells: list[dict], torch_ms: dict[str, float]) -> str:
    rows = []
    def timed_ms(c: dict) -> float:
        return float(np.median(c["retimed_ms"])) if c.get("retimed_ms") else c["tuned_ms"]

    by_graph = {(c["network"], c["seed"], c["graph"]): timed_ms(c) for c in cells}
    for c in sorted(cells, key=lambda c: (c["network"], c["seed"],
                                          GRAPHS.index(base_graph(c["graph"])), c["graph"])):
        timed = timed_ms(c)
        ref = by_graph.get((c["network"], c["seed"], "exported"))
        exact = by_graph.get((c["network"], c["seed"], c["graph"] + EXACT))
        torch = torch_ms.get(c["network"])
        rows.append([c["network"], c["graph"], c["seed"], c["tasks_total"], c["trials"],
                     f"{c['search_s'] / 60:.1f}",
                     "-" if c["estimated_ms"] is None else f"{c['estimated_ms']:.2f}",
                     f"{timed:.2f}", "-" if ref is None else f"{ref / timed:.2f}x",
                     "-" if exact is None else f"{exact / timed:.2f}x",
                     "-" if torch is None else f"{torch:.2f}",
                     "-" if torch is None else f"{torch / timed:.2f}x"])
    return format_table(["network", "graph", "seed", "tasks", "trials", "search min",
                         "est. ms", "tuned ms", "vs exported", "vs exact", "PyTorch ms",
                         "vs PyTorch"],
                        rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="resnet18")
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved end-to-end timings")
    parser.add_argument("--out", default="bench/out/graph-levers")
    parser.add_argument("--retime-only", action="store_true",
                        help="time the finished cells again and report; tune nothing")
    args = parser.parse_args()
    graphs = [g for g in args.graphs.split(",") if g]
    for g in graphs:
        check_label(g)
    networks = [n for n in args.networks.split(",") if n]
    seeds = [int(s) for s in args.seeds.split(",") if s]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    cells = []
    for seed in seeds:
        for network in networks:
            for graph in graphs:
                path = out / f"{cell_name(network, graph, seed)}.json"
                if not path.exists():
                    if args.retime_only:
                        continue
                    print(f"== {network} {graph} seed {seed} ({time.strftime('%H:%M:%S')})",
                          flush=True)
                    path.write_text(json.dumps(tune_cell(network, graph, seed, args, out),
                                               indent=1))
                cells.append(json.loads(path.read_text()))
    retime(cells, args)
    for c in cells:
        (out / f"{cell_name(c['network'], c['graph'], c['seed'])}.json").write_text(
            json.dumps(c, indent=1))
    threads = resolve_profile(args.hardware).num_threads
    torch_ms = {n: torch_eager_ms_fresh(n, threads) for n in networks}
    table = report(cells, torch_ms)
    print(table)
    (out / "report.md").write_text(
        f"Graph levers on {resolve_profile(args.hardware).name}, MetaSchedule XGB, "
        f"{args.trials} trials, flops share 1.0; end to end = median of {args.rounds} "
        f"interleaved rounds (20 runs each); PyTorch eager in a fresh process at {threads} "
        f"thread(s).\n\n{table}\n")


if __name__ == "__main__":
    main()
