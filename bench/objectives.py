"""Other training objectives for one lgbm recipe, on networks it never saw: LightGBM's ranking
loss (the recipe as tenforge trains it) against pointwise regressions on the same inputs, and
the rank average of the ranking model with each.

A lambdarank model learns each task's order and nothing across tasks; a pointwise regression
on log(best / latency) (the log of the label) or on log(FLOPs / latency) (absolute throughput)
learns one scale for every task, which could carry better to tasks it never saw. A rank
average (each task's candidates ranked by each model, the ranks summed) asks whether the two
err in different places.

Data and splits are bench/feature_sets.py's (the --holdout networks and every task they share
are the test part). The regressions take the recipe's inputs (config_inputs), its LightGBM
settings and its task weights, with n_estimators rounds (no early stopping: the ranking
model's early stopping reads per-task peak@1, which a regression's scale does not serve).

    .venv/bin/python bench/objectives.py [--seeds 0,1,2] [--params JSON] [--hardware H1,H2]
        [--score-hardware H1,H2] [--holdout resnet50,mobilenet_v2,bert] [--extra DIR,DIR]
        [--db STORE] [--json OUT]
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
    extra_folders,
    held_out_parts,
    parse_params,
    profiles,
    recipe_bench_options,
    scored_rows,
    store_or_seed,
)
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

import lightgbm as lgb  # noqa: E402

from models._trees import config_inputs, task_weights  # noqa: E402
from models.dataset import Dataset, DataSpec, load_dataset  # noqa: E402
from models.evaluate import network_rows, network_topk  # noqa: E402
from models.registry import create_model  # noqa: E402
from storage.reports import format_table  # noqa: E402

FLOOR = 1e-3  # a failed candidate's label (0) and anything below: log(FLOOR)


def regression_target(data: Dataset, target: str) -> np.ndarray:
    """Per row: "log_label" log(best / latency) (failed: log FLOOR), "log_throughput"
    log(FLOPs / latency) (failed: NaN, left out of training)."""
    if target == "log_label":
        return np.log(np.clip(data.label.astype(np.float64), FLOOR, 1.0))
    if target == "log_throughput":
        with np.errstate(divide="ignore"):
            value = np.log(data.group_flops[data.group] / data.latency)
        return np.where(np.isfinite(value), value, np.nan)
    raise ValueError(f"unknown regression target {target}; give log_label or log_throughput")


def ranks_within_tasks(data: Dataset, scores: np.ndarray) -> np.ndarray:
    """Each row's rank among its task's rows by `scores`, scaled to 0..1 (1: ranked first)."""
    out = np.zeros(len(scores))
    for group in np.unique(data.group):
        rows = np.flatnonzero(data.group == group)
        out[rows] = np.argsort(np.argsort(scores[rows], kind="stable")) / max(rows.size - 1, 1)
    return out


def fit_regression(model, train: Dataset, target: str) -> lgb.Booster:
    """A pointwise LightGBM regression with `model`'s (a fitted LGBMCostModel's) inputs,
    settings and task weights."""
    y = regression_target(train, target)
    keep = np.isfinite(y)
    x = config_inputs(train, model.config)[keep]
    weights = task_weights(train, model.config.task_weight_power)[train.group][keep]
    params = {k: v for k, v in model._params().items()
              if k not in ("label_gain", "lambdarank_truncation_level")}
    params["objective"] = "regression"
    return lgb.train(params, lgb.Dataset(x, y[keep], weight=weights),
                     num_boost_round=model.config.n_estimators)


def score(test: Dataset, scores: np.ndarray, holdout: tuple[str, ...]) -> tuple[float, float]:
    report = network_topk(test, scores, holdout)
    return report["mean_network_top1"], report["mean_network_top5"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    recipe_bench_options(parser, "also write every split's scores here")
    args = parser.parse_args()
    params = parse_params(args.params)
    db = store_or_seed(args.db, "objectives", extra_folders(args.extra))
    data = load_dataset(db, DataSpec(hardware=profiles(db, args.hardware), traces=True,
                                     latency=args.latency))
    holdout = tuple(args.holdout.split(","))
    print(f"data {data.describe()}; held out: {', '.join(holdout)}; lgbm {json.dumps(params)}",
          flush=True)
    runs: dict[str, list[tuple[float, float]]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        test = scored_rows(test, args.score_hardware.split(",") if args.score_hardware else None)
        test = test.subset(network_rows(test, holdout))
        start = time.perf_counter()
        model = create_model("lgbm", seed=seed, **params)
        model.fit(train, valid)
        ranking = model.predict(test)
        scores = {"lambdarank (the recipe)": ranking}
        x_test = config_inputs(test, model.config)
        for target in ("log_label", "log_throughput"):
            booster = fit_regression(model, train, target)
            scores[f"regression on {target}"] = booster.predict(x_test)
            scores[f"rank average: lambdarank + {target}"] = (
                ranks_within_tasks(test, ranking)
                + ranks_within_tasks(test, scores[f"regression on {target}"]))
        for name, values in scores.items():
            runs.setdefault(name, []).append(score(test, values, holdout))
        print(f"  seed {seed} ({time.perf_counter() - start:.0f} s): " + "; ".join(
            f"{name} {runs[name][-1][0]:.3f}" for name in scores), flush=True)
    rows = [(name, f"{np.median([v[0] for v in values]):.3f}",
             " / ".join(f"{v[0]:.3f}" for v in values), f"{np.median([v[1] for v in values]):.3f}")
            for name, values in runs.items()]
    print(f"\nheld-out networks, seeds {args.seeds}:\n" + format_table(
        ["objective", "net top-1 (median)", "per seed", "net top-5 (median)"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.describe(), "holdout": holdout,
                                               "latency": args.latency, "params": params,
                                               "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
