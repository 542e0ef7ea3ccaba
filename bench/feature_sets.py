"""What each feature set adds on networks a model never saw: the same tree families trained on
per-store features alone, plus the trace summary, and plus its tile block
(models/trace_features.py), beside MetaSchedule's XGB, on the same by_network splits.

Data: the seed dataset (loaded into a temporary store), or --db. For each seed, one by_network
split (the --holdout networks and every task they share are the test part; validation is whole
networks too); every variant trains on it and is scored on the held-out networks: TenSet's
network-level top-1 and top-5 (mean over networks), per-task peak@1 and pairwise accuracy.
Prints one row per variant with the median over seeds and the spread (min-max), then each
profile's median network top-1.

`--also 'NAME=JSON'` (repeatable) adds a recipe beside the feature sets: a tree model's params
(for `bagged`, each member's), e.g. the task weights of the ranking loss:

    .venv/bin/python bench/feature_sets.py [--seeds 0,1,2] [--holdout resnet50,mobilenet_v2,bert]
        [--db STORE] [--hardware H1,H2] [--families xgb,lgbm,bagged] [--json OUT]
        [--feature-sets 'per-store + trace + tiles'] [--also 'weights 0.25={"trace_features":
        true, "tile_features": true, "task_weight_power": 0.25}']
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


def variants(families: list[str], feature_sets: list[str] | None = None,
             also: dict[str, dict] | None = None) -> list[tuple[str, str, dict]]:
    """(name, family, params): each family on per-store features, with the trace summary, and
    with its tile block too (or the `feature_sets` named), then each recipe of `also` (`bagged`:
    a bag of five lgbm, each with the feature set or recipe)."""
    recipes = {name: FEATURE_SETS[name]
               for name in (FEATURE_SETS if feature_sets is None else feature_sets)}
    recipes.update(also or {})
    out = []
    for family in families:
        for name, params in recipes.items():
            out.append((f"{family} {name}", family,
                        {"member_params": params} if family == "bagged" else params))
    out.append(("metaschedule_xgb per-store", "metaschedule_xgb", {}))
    return out


def parse_recipe(text: str) -> tuple[str, dict]:
    """'NAME=JSON' -> (NAME, params); a clear error for anything else."""
    name, sep, params = text.partition("=")
    try:
        parsed = json.loads(params) if sep and name.strip() else None
    except json.JSONDecodeError:
        parsed = None
    if not isinstance(parsed, dict):
        raise SystemExit(f"--also {text!r}: give NAME={{JSON object of model params}}, e.g. "
                         """'weights={"trace_features": true, "task_weight_power": 0.25}'""")
    return name.strip(), parsed


def check_feature_sets(names: list[str]) -> list[str]:
    if names == ["none"]:  # only the --also recipes (and MetaSchedule's XGB)
        return []
    unknown = [name for name in names if name not in FEATURE_SETS]
    if unknown:
        raise SystemExit(f"--feature-sets: unknown {', '.join(map(repr, unknown))}; choose "
                         f"from {', '.join(map(repr, FEATURE_SETS))}, comma-separated")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store to read (default: the seed, in a temp store)")
    parser.add_argument("--hardware", help="comma-separated profiles (default: all in the store)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--families", default="xgb,lgbm")
    parser.add_argument("--json", help="also write every run's numbers here")
    parser.add_argument("--feature-sets", help="comma-separated FEATURE_SETS names (default: "
                        "all; none: only the --also recipes)")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=JSON",
                        help="a recipe beside the feature sets: NAME={tree model params}")
    args = parser.parse_args()
    feature_sets = check_feature_sets([name.strip() for name in args.feature_sets.split(",")]
                                      ) if args.feature_sets else None
    also = dict(parse_recipe(text) for text in args.also)

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
        for name, family, params in variants(args.families.split(","), feature_sets, also):
            model = create_model(family, seed=seed, **params)
            model.fit(train, valid)
            report = network_report(model, test, holdout)
            runs.setdefault(name, []).append({
                "seed": seed, **{k: report[k] for k in KEYS}, "networks": report["networks"],
                "per_hardware": {h: r["mean_network_top1"]
                                 for h, r in report["per_hardware"].items()}})
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
    print(per_profile_table(runs))
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.describe(), "holdout": holdout,
                                               "runs": runs}, indent=1, default=str))


def per_profile_table(runs: dict[str, list[dict]]) -> str:
    """Each variant's median network top-1 per profile (over its seeds), a profile a column."""
    hardware = sorted({h for results in runs.values() for r in results
                       for h in r["per_hardware"]})
    rows = []
    for name, results in runs.items():
        medians = [np.median([r["per_hardware"][h] for r in results if h in r["per_hardware"]])
                   for h in hardware]
        rows.append((name, *(f"{m:.3f}" for m in medians)))
    return "\nper profile, median network top-1 over the seeds:\n" + format_table(
        ["variant", *hardware], rows)


if __name__ == "__main__":
    main()
