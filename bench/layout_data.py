"""What a graph layout's own measured tasks add to a cost model: trained with them and without.

Why: the tuning matrix's lean-nchw16c cell on an AVX-512 Xeon never reached MetaSchedule's
final estimate, where lean-nchw8c on the same CPU got there 2.12x sooner
(docs/tuning-results.md). The seed then held NCHW8c tasks but no NCHW16c ones: the model ranked
16-channel blocks from what it knew of 8-channel ones. This measures that gap offline.

Data: the store's x86 one-thread CPU profiles (the seed by default). One by_network split per
--seeds entry (the --holdout networks and every task they share are the test part, validation
is whole networks, as bench/leaderboard.py). Arms, scored on the held-out networks' +LAYOUT
graphs (resnet18+nchw16c), per CPU that measured them:

- `without LAYOUT`: lgbm + trace summary, trained without the tasks that only +LAYOUT graphs
  have (a model that never saw that layout; the exported graphs' tasks stay);
- `with LAYOUT`: the same, with them;
- `with LAYOUT, no trace`: lgbm on the per-store features alone, with them (whether the trace
  summary is what transfers or fails to);
- `MS XGB`: MetaSchedule's XGB trained on the `with` rows;
- `random`: the mean of 20 random rankings of the same rows (the floor).

Median over seeds (min-max).

    .venv/bin/python bench/layout_data.py [--db STORE] [--layout nchw16c] [--seeds 0,1,2]
        [--holdout resnet18,mobilenet_v2,bert] [--family lgbm] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import (  # noqa: E402
    held_out_bench_options,
    held_out_parts,
    one_thread_cpus,
    spread,
    store_or_seed,
)
from bench.unseen_cpu import fitted, on_hardware, random_floor, score  # noqa: E402
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from core.errors import TenforgeError  # noqa: E402
from core.graphs import CONV_LAYOUTS  # noqa: E402
from models.dataset import DataSpec, load_dataset, network_family, network_name  # noqa: E402
from storage.reports import format_table  # noqa: E402

ARMS = ("without", "with", "with, no trace", "MS XGB", "random")


def is_layout(label: str, layout: str) -> bool:
    """Whether the network `label` (resnet18+nchw16c@160) is a graph prepared in `layout`."""
    return network_name(label).endswith(f"+{layout}")


def layout_only(data, layout: str) -> np.ndarray:
    """Per row of `data`: its task belongs to +`layout` graphs alone. (A task the exported
    graph has too, such as the last dense layer, is not the layout's to take away.)"""
    only = [w for w, nets in data.workload_networks.items()
            if nets and all(is_layout(n, layout) for n in nets)]
    return np.isin(data.group_workload[data.group], only)


def layout_networks(data, layout: str, holdout: tuple[str, ...]) -> tuple[str, ...]:
    """The held-out networks' +`layout` graphs that `data` measured (resnet18+nchw16c)."""
    return tuple(sorted({network_name(n) for nets in data.workload_networks.values()
                         for n in nets
                         if is_layout(n, layout) and network_family(n) in holdout}))


def arms_for_seed(train, valid, test, layout: str, targets: tuple[str, ...], family: str,
                  seed: int) -> dict[str, dict[str, dict]]:
    """Per CPU that measured `targets`' own tasks: every arm's scores on its rows of them (a
    CPU with only the tasks the exported graph shares, a dense layer, is not scored)."""
    keep_train, keep_valid = ~layout_only(train, layout), ~layout_only(valid, layout)
    params = {"trace_features": True}
    models = {
        "without": fitted(family, params, train.subset(np.flatnonzero(keep_train)),
                          valid.subset(np.flatnonzero(keep_valid)), seed),
        "with": fitted(family, params, train, valid, seed),
        "with, no trace": fitted(family, {}, train, valid, seed),
        "MS XGB": fitted("metaschedule_xgb", {}, train, valid, seed),
    }
    names = np.array(test.hardware_names)
    out: dict[str, dict[str, dict]] = {}
    for cpu in sorted(set(names[test.candidate_hardware()])):
        rows = on_hardware(test, {cpu})
        if not layout_only(rows, layout).any():
            continue
        try:
            out[cpu] = {arm: score(m, rows, targets) for arm, m in models.items()}
        except TenforgeError:
            continue  # this CPU measured none of the layout's held-out tasks
        out[cpu]["random"] = random_floor(rows, targets)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    held_out_bench_options(parser, "resnet18,mobilenet_v2,bert",
                           "networks held out of training (the tuning matrix's)")
    parser.add_argument("--layout", default="nchw16c", choices=sorted(CONV_LAYOUTS),
                        help="the prepared graph whose tasks are taken away")
    args = parser.parse_args()

    db = store_or_seed(args.db, "layout-data")
    holdout = tuple(args.holdout.split(","))
    data = load_dataset(db, DataSpec(hardware=tuple(one_thread_cpus(db)), traces=True))
    targets = layout_networks(data, args.layout, holdout)
    if not targets:
        raise SystemExit(f"{db} has no +{args.layout} graph of {', '.join(holdout)} to score: "
                         f"collect one, e.g. `tenforge collect --networks {holdout[0]} "
                         f"--graph {args.layout}`")
    print(f"data: {data.describe()}; held out: {', '.join(holdout)}; scored on "
          f"{', '.join(targets)}; rows only +{args.layout} graphs have: "
          f"{int(layout_only(data, args.layout).sum())}", flush=True)
    results: dict[str, dict[str, list[dict]]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        start = time.perf_counter()
        train, valid, test = held_out_parts(data, seed, holdout)
        for cpu, arms in arms_for_seed(train, valid, test, args.layout, targets, args.family,
                                       seed).items():
            for arm, values in arms.items():
                results.setdefault(cpu, {}).setdefault(arm, []).append(values)
            print(f" seed {seed} {cpu}: " + ", ".join(
                f"{arm} {v['top1']:.3f}" for arm, v in arms.items())
                + f" ({time.perf_counter() - start:.0f} s)", flush=True)
    rows = [[cpu, arm if arm in ("MS XGB", "random") else f"{args.family}, {arm} ({args.layout})",
             spread([r["top1"] for r in arms[arm]], 3), spread([r["top5"] for r in arms[arm]], 3)]
            for cpu, arms in results.items() for arm in ARMS]
    print(f"\nMean network top-1 / top-5 on {', '.join(targets)}, seeds {args.seeds} "
          "(median, min-max):")
    print(format_table(["cpu", "model", "net top-1", "net top-5"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"data": data.describe(), "holdout": holdout, "layout": args.layout,
             "targets": targets, "seeds": args.seeds, "family": args.family,
             "results": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
