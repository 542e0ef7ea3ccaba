"""Every cost-model family, with default and with searched hyperparameters, on the same data and
the same splits, side by side with MetaSchedule's own XGBModel.

Data: the store given by --db, or (default) a fresh store loaded from the shipped seed dataset.
Splits: by_task (unseen tasks) and by_network (unseen networks, --holdout), both seeded.
For each split and family: fit with the family's defaults; run an Optuna study restricted to
that family (--trials, on the validation part) and refit with its best parameters; then score
on the test part. Prints one table per split: top-1 / top-5 peak score, pairwise accuracy, RMSE,
training time, inference time per 1000 candidates, and top-1 over MetaSchedule's XGB.

    .venv/bin/python bench/leaderboard.py [--trials 6] [--holdout resnet50] [--db PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import profiles, store_or_seed  # noqa: E402
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.evaluate import evaluate, network_scores  # noqa: E402
from models.registry import create_model  # noqa: E402
from models.search import FAMILIES, SearchSpec, run_search  # noqa: E402
from models.splits import SplitSpec, make_split  # noqa: E402
from storage.reports import format_table  # noqa: E402

BASELINE = "metaschedule_xgb"


def fit_and_score(family, params, train, valid, test, seed):
    model = create_model(family, seed=seed, **params)
    info = model.fit(train, valid)
    metrics = evaluate(model, test)
    scores = model.predict(test)
    top = {k: network_scores(test, scores, k=k) for k in (1, 5)}
    return {**metrics, "train_s": info["train_s"], "networks_top1": top[1],
            **{f"network_top{k}": sum(n.values()) / len(n) if n else float("nan")
               for k, n in top.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store to read (default: the seed, loaded into a temp store)")
    parser.add_argument("--hardware", help="comma-separated profiles (default: all in the store)")
    parser.add_argument("--holdout", default="resnet50", help="network(s) held out (by_network)")
    parser.add_argument("--trials", type=int, default=6, help="Optuna trials per family")
    parser.add_argument("--budget", type=float, default=600, help="seconds per family study")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--splits", default="by_task,by_network")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="tenforge-leaderboard-"))
    db = store_or_seed(args.db, "leaderboard")
    hardware = profiles(db, args.hardware)
    data = load_dataset(db, DataSpec(hardware=hardware))
    print(f"data: {data.describe()}")
    families = args.families.split(",")
    results = []
    for split_kind in args.splits.split(","):
        holdout = tuple(args.holdout.split(",")) if split_kind == "by_network" else ()
        split = make_split(data, SplitSpec(split_kind, seed=args.seed, holdout=holdout))
        train, valid, test = (data.subset(getattr(split, p)) for p in ("train", "valid", "test"))
        label = split_kind + (f" (held out: {','.join(holdout)})" if holdout else "")
        print(f"\n== {label}: {split.sizes()}", flush=True)
        rows = []
        for family in [*families, BASELINE]:
            start = time.perf_counter()
            default = fit_and_score(family, {}, train, valid, test, args.seed)
            rows.append((family, "default", default))
            print(f"  {family} default: top1 {default['peak1']:.4f} "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
            if family == BASELINE:
                continue  # MetaSchedule's model is used as MetaSchedule configures it
            spec = SearchSpec(families=(family,), trials=args.trials, time_budget_s=args.budget,
                              seed=args.seed, max_epochs=args.max_epochs)
            found = run_search(train, valid, spec, f"{split_kind}-{family}",
                               work / "studies.journal", log=lambda _: None)
            searched = fit_and_score(family, found.best_params, train, valid, test, args.seed)
            rows.append((family, "searched", searched))
            print(f"  {family} searched ({len(found.trials)} trials): top1 "
                  f"{searched['peak1']:.4f} params {json.dumps(found.best_params)}", flush=True)
        base = next(m for f, _, m in rows if f == BASELINE)
        table = [(f, hp, round(m["peak1"], 4), round(m["peak5"], 4), round(m["pairwise"], 4),
                  round(m["rmse"], 4), round(m["network_top1"], 4), round(m["network_top5"], 4),
                  round(m["train_s"], 1),
                  round(m["predict_ms_per_1000"], 1), f"{m['peak1'] - base['peak1']:+.4f}")
                 for f, hp, m in rows]
        print(f"\n{label}, test part ({test.describe()['candidates']} candidates, "
              f"{test.describe()['groups']} tasks):")
        print(format_table(["family", "hparams", "top1", "top5", "pairwise", "rmse",
                            "net top1", "net top5", "train s", "infer ms/1k", "top1 vs MS-xgb"],
                           table))
        if holdout:  # network-level top-1 of each held-out network (mean over profiles)
            nets = sorted({k.rsplit("@", 1)[0] for _, _, m in rows for k in m["networks_top1"]
                           if k.rsplit("@", 1)[0].split("@")[0] in holdout})
            print(format_table(["family", "hparams", *nets], [
                (f, hp, *(round(sum(v for k, v in m["networks_top1"].items()
                                    if k.rsplit("@", 1)[0] == n) /
                                max(1, sum(k.rsplit("@", 1)[0] == n
                                           for k in m["networks_top1"])), 3) for n in nets))
                for f, hp, m in rows]))
        results.append({"split": split_kind, "holdout": holdout, "sizes": split.sizes(),
                         "rows": [{"family": f, "hparams": hp, **m} for f, hp, m in rows]})
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.describe(), "results": results},
                                              indent=1, default=str))


if __name__ == "__main__":
    main()
