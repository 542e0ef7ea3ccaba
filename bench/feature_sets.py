"""What each feature set adds on networks a model never saw: the same tree families trained on
per-store features alone, plus the trace summary, and plus its tile block
(models/trace_features.py), beside MetaSchedule's XGB, on the same by_network splits.

Data: the seed dataset (loaded into a temporary store), or --db. For each seed, one by_network
split (the --holdout networks and every task they share are the test part; validation is whole
networks too); every variant trains on it and is scored on the held-out networks: TenSet's
network-level top-1 and top-5 (mean over networks), per-task peak@1 and pairwise accuracy.
Prints one row per variant with the median over seeds and the spread (min-max).

    .venv/bin/python bench/feature_sets.py [--seeds 0,1,2] [--holdout resnet50,mobilenet_v2,bert]
        [--db STORE] [--hardware H1,H2] [--families xgb,lgbm,bagged] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import FEATURE_SETS, held_out_parts, profiles, store_or_seed  # noqa: E402
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.evaluate import network_report  # noqa: E402
from models.registry import create_model  # noqa: E402
from storage.reports import format_table  # noqa: E402

KEYS = ("mean_network_top1", "mean_network_top5", "peak1", "pairwise")


def variants(families: list[str]) -> list[tuple[str, str, dict]]:
    """(name, family, params): each family on per-store features, with the trace summary, and
    with its tile block too (`bagged`: a bag of five lgbm, each with the feature set)."""
    out = []
    for family in families:
        for name, params in FEATURE_SETS.items():
            out.append((f"{family} {name}", family,
                        {"member_params": params} if family == "bagged" else params))
    out.append(("metaschedule_xgb per-store", "metaschedule_xgb", {}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store to read (default: the seed, in a temp store)")
    parser.add_argument("--hardware", help="comma-separated profiles (default: all in the store)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--families", default="xgb,lgbm")
    parser.add_argument("--json", help="also write every run's numbers here")
    args = parser.parse_args()

    db = store_or_seed(args.db, "features")
    hardware = profiles(db, args.hardware)
    start = time.perf_counter()
    data = load_dataset(db, DataSpec(hardware=hardware, traces=True))
    holdout = tuple(args.holdout.split(","))
    print(f"data {data.describe()} ({time.perf_counter() - start:.0f} s to load with traces); "
          f"held out: {', '.join(holdout)}", flush=True)
    runs: dict[str, list[dict]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        for name, family, params in variants(args.families.split(",")):
            model = create_model(family, seed=seed, **params)
            model.fit(train, valid)
            report = network_report(model, test, holdout)
            runs.setdefault(name, []).append({"seed": seed, **{k: report[k] for k in KEYS},
                                              "networks": report["networks"]})
            print(f"  {name}: mean network top-1 {report['mean_network_top1']:.3f}, top-5 "
                  f"{report['mean_network_top5']:.3f}", flush=True)
    rows = []
    for name, results in runs.items():
        cells = []
        for key in KEYS:
            values = np.array([r[key] for r in results])
            cells.append(f"{np.median(values):.3f} ({values.min():.3f}-{values.max():.3f})")
        nets = {n: np.median([r["networks"][n]["top1"] for r in results])
                for n in results[0]["networks"]}
        rows.append((name, *cells, *(f"{v:.3f}" for v in nets.values())))
    nets = list(next(iter(runs.values()))[0]["networks"])
    print(f"\nheld-out networks, median over seeds {args.seeds} (min-max):")
    print(format_table(["variant", "net top-1", "net top-5", "peak@1", "pairwise",
                        *(f"{n} top-1" for n in nets)], rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.describe(), "holdout": holdout,
                                               "runs": runs}, indent=1, default=str))


if __name__ == "__main__":
    main()
