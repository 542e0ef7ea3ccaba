"""Do learned cost models rank NHWC tasks of a network they never saw, and does NHWC data of
other networks teach them to (issue 15's graph levers, issue 19's unseen networks)?

`retune --graph nhwc` tunes channels-last convolutions; the seed was all NCHW until
`collect --graph nhwc` (networks NAME+nhwc). For each seed: a by_network split holds out
`--holdout` whole (its exported and NHWC graphs, models.dataset.network_family); the same
lgbm + trace model is trained twice on the other networks,
  (a) without any task that only a prepared graph has (what the seed held before), and
  (b) with them (the NHWC tasks of the other networks),
and both are scored on the held-out network's exported tasks and on its NHWC tasks
(network-level top-1 / top-5, DESIGN.md section 3). Validation networks are picked by the
split's seed, as in bench/leaderboard.py.

    taskset -c 0 .venv/bin/python bench/layout_transfer.py --db STORE \\
        [--hardware local-1t] [--holdout mobilenet_v2] [--seeds 0,1,2]

--hardware is the profile whose measurements are read (default: this machine's one-thread
profile; any profile the store holds data of works, e.g. cpu-znver3-avx2-1t).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import held_out_parts  # noqa: E402
from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.evaluate import network_report  # noqa: E402
from models.registry import create_model  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.hardware import profile_name  # noqa: E402


def without_prepared_graphs(data):
    """`data` less the tasks that only prepared graphs (NAME+GRAPH) have."""
    only_graph = {w for w, nets in data.workload_networks.items()
                  if nets and all("+" in n for n in nets)}
    keep = ~np.isin(data.group_workload[data.group], list(only_graph))
    return data.subset(np.flatnonzero(keep))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--holdout", default="mobilenet_v2")
    parser.add_argument("--graph", default="nhwc")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()

    hardware = profile_name(args.hardware)
    data = load_dataset(args.db, DataSpec(hardware=(hardware,), traces=True))
    graph_name = f"{args.holdout}+{args.graph}"
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        train, valid, test = held_out_parts(data, seed, (args.holdout,))
        valid = without_prepared_graphs(valid)  # both models choose on the same rows
        for label, part in (("(a) NCHW only", without_prepared_graphs(train)),
                            ("(b) + NHWC of other networks", train)):
            model = create_model("lgbm", seed=seed, trace_features=True)
            model.fit(part, valid)
            report = network_report(model, test)["networks"]
            exported = [v for n, v in report.items() if "+" not in n]
            nhwc = report.get(graph_name)
            rows.append((seed, label, len(part), len(np.unique(part.group)),
                         np.mean([v["top1"] for v in exported]),
                         np.mean([v["top5"] for v in exported]),
                         None if nhwc is None else nhwc["top1"],
                         None if nhwc is None else nhwc["top5"]))
            print(rows[-1], flush=True)
    print(f"lgbm + trace on {hardware}, {args.holdout} (every graph of it) held out; "
          f"{args.holdout}'s exported instances averaged")
    print(format_table(["seed", "training data", "rows", "tasks",
                        f"{args.holdout} top-1", "top-5", f"{graph_name} top-1", "top-5"],
                       [[s, lab, n, t, f"{a:.3f}", f"{b:.3f}",
                         "-" if c is None else f"{c:.3f}", "-" if d is None else f"{d:.3f}"]
                        for s, lab, n, t, a, b, c, d in rows]))


if __name__ == "__main__":
    main()
