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
(for `bagged`, each member's), e.g. the task weights of the ranking loss.

`--task-fractions 0.125,0.25,0.5,1` trains every variant on that share of the training part's
distinct tasks too (a seeded choice of workloads, each smaller set inside the larger; every
profile's rows of a chosen task kept), scored on the same held-out networks: how the score
grows with the number of tasks, which is what TenSet found matters at a fixed data size.
`--row-fractions 0.5` is the task shares' control: every training task kept, with that share
of each task's rows (seeded), so a share of tasks can be set against the same share of rows.
`--score-hardware H1,H2` scores on those profiles' held-out rows only, so a model trained on
more profiles (`--hardware`) can be set against one trained on these alone.

    .venv/bin/python bench/feature_sets.py [--seeds 0,1,2] [--holdout resnet50,mobilenet_v2,bert]
        [--db STORE] [--hardware H1,H2] [--families xgb,lgbm,bagged] [--json OUT]
        [--feature-sets 'per-store + trace + tiles'] [--also 'weights 0.25={"trace_features":
        true, "tile_features": true, "task_weight_power": 0.25}'] [--task-fractions 0.25,1]
        [--row-fractions 0.25,0.5] [--score-hardware H1,H2]
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
    FEATURE_SETS,
    extra_folders,
    held_out_parts,
    latency_option,
    profiles,
    scored_rows,
    store_or_seed,
)
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


def task_subsets(train, seed: int, fractions: list[float]) -> list[tuple[float, object]]:
    """(fraction, train restricted to that share of its distinct workloads) for each fraction,
    nested: one seeded order of the workloads, each subset a prefix of it. 1 is `train` itself."""
    row_workload = train.group_workload[train.group]  # (a subset keeps every group's row)
    workloads = np.unique(row_workload)
    order = np.random.default_rng(seed).permutation(len(workloads))
    out = []
    for fraction in fractions:
        if fraction >= 1:
            out.append((1.0, train))
            continue
        keep = workloads[order[:max(1, int(round(fraction * len(workloads))))]]
        out.append((fraction, train.subset(np.flatnonzero(np.isin(row_workload, keep)))))
    return out


def row_subsets(train, seed: int, fractions: list[float]) -> list[tuple[float, object]]:
    """(fraction, train with that share of each task's rows, at least 2 a (task, profile)
    group) for each fraction below 1: the same shares of data as task_subsets, every task kept."""
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(len(train)), train.group))  # rows by group, shuffled within
    groups, starts, counts = np.unique(train.group[order], return_index=True, return_counts=True)
    rank = np.arange(len(order)) - np.repeat(starts, counts)  # a row's place in its group
    out = []
    for fraction in (f for f in fractions if f < 1):
        keep = np.maximum(2, np.round(fraction * counts).astype(int))
        out.append((fraction, train.subset(np.sort(order[rank < np.repeat(keep, counts)]))))
    return out


def parse_fractions(text: str, option: str = "--task-fractions") -> list[float]:
    """'0.25,1' -> [0.25, 1.0]; a clear error for anything outside (0, 1]."""
    try:
        fractions = [float(part) for part in text.split(",") if part.strip()]
    except ValueError:
        fractions = []
    if not fractions or not all(0 < f <= 1 for f in fractions):
        raise SystemExit(f"{option} {text!r}: give shares of the training data in (0, 1], "
                         "comma-separated, e.g. 0.125,0.25,0.5,1")
    return sorted(set(fractions))


def training_parts(train, seed: int, task_fractions: list[float],
                   row_fractions: list[float]) -> list[tuple[str, object]]:
    """(suffix for the variant's name, training data): the task shares, then the row shares;
    no suffix where the whole training part is all there is."""
    parts = [("" if task_fractions == [1.0] and not row_fractions else f" @{f:g} tasks", part)
             for f, part in task_subsets(train, seed, task_fractions)]
    return parts + [(f" @{f:g} rows", part) for f, part in row_subsets(train, seed, row_fractions)]


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
    parser.add_argument("--extra", metavar="DIR,DIR",
                        help="shard folders to load beside the seed (e.g. dataset/extra/...)")
    parser.add_argument("--hardware", help="comma-separated profiles (default: all in the store)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--families", default="xgb,lgbm")
    parser.add_argument("--json", help="also write every run's numbers here")
    latency_option(parser)
    parser.add_argument("--feature-sets", help="comma-separated FEATURE_SETS names (default: "
                        "all; none: only the --also recipes)")
    parser.add_argument("--also", action="append", default=[], metavar="NAME=JSON",
                        help="a recipe beside the feature sets: NAME={tree model params}")
    parser.add_argument("--task-fractions", default="1", metavar="F1,F2",
                        help="also train on these shares of the training tasks (default 1)")
    parser.add_argument("--row-fractions", default=None, metavar="F1,F2",
                        help="also train on these shares of each training task's rows")
    parser.add_argument("--score-hardware", default=None, metavar="H1,H2",
                        help="score on these profiles' held-out rows only (default: all)")
    args = parser.parse_args()
    fractions = parse_fractions(args.task_fractions)
    row_fractions = ([f for f in parse_fractions(args.row_fractions, "--row-fractions") if f < 1]
                     if args.row_fractions else [])
    feature_sets = check_feature_sets([name.strip() for name in args.feature_sets.split(",")]
                                      ) if args.feature_sets else None
    also = dict(parse_recipe(text) for text in args.also)

    db = store_or_seed(args.db, "features", extra_folders(args.extra))
    hardware = profiles(db, args.hardware)
    start = time.perf_counter()
    data = load_dataset(db, DataSpec(hardware=hardware, traces=True, latency=args.latency))
    holdout = tuple(args.holdout.split(","))
    print(f"data {data.describe()} ({time.perf_counter() - start:.0f} s to load with traces); "
          f"held out: {', '.join(holdout)}", flush=True)
    runs: dict[str, list[dict]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        test = scored_rows(test, args.score_hardware.split(",") if args.score_hardware else None)
        for suffix, part in training_parts(train, seed, fractions, row_fractions):
            tasks = len(np.unique(part.group_workload[part.group]))
            for base, family, params in variants(args.families.split(","), feature_sets, also):
                name = base + suffix
                model = create_model(family, seed=seed, **params)
                model.fit(part, valid)
                report = network_report(model, test, holdout)
                runs.setdefault(name, []).append({
                    "seed": seed, "train_tasks": tasks,
                    "train_rows": len(part), **{k: report[k] for k in KEYS},
                    "networks": report["networks"],
                    "per_hardware": {h: r["mean_network_top1"]
                                     for h, r in report["per_hardware"].items()}})
                print(f"  {name} ({tasks} tasks, {len(part)} rows): mean network top-1 "
                      f"{report['mean_network_top1']:.3f}, top-5 "
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
                                               "latency": args.latency,
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
