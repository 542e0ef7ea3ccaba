"""Transfer to a new hardware profile from few measurements, and dataset pruning, on the seed.

Source profile -> target profile (defaults: the two CPU profiles of the seed). The target's
tasks are split by task (30% held out for testing, seeded); fine-tuning samples are drawn from
the rest. For N in --ns target samples (averaged over --repeats sample draws) it prints top-1 /
top-5 peak score, pairwise accuracy and training time on the held-out target tasks for
  (a) training from scratch on the N samples,
  (b) the pre-trained model with no fine-tuning (N = 0),
  (c) each fine-tuning strategy: full, head, residual, multi_head,
and the reference "scratch on all target data". Samples are drawn whole tasks at a time (up to
16 candidates of each; models.splits.sample_by_task). Then a pruning table: fraction of the
training data kept, whole tasks by importance or an equal cap per task, vs the same metrics
(XGBoost, by_task split over every profile).

    .venv/bin/python bench/transfer.py [--family mlp] [--ns 0,50,200,1000,all] [--repeats 3]
        [--source P] [--target P] [--no-pruning]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.evaluate import evaluate  # noqa: E402
from models.pruning import PruneSpec, prune  # noqa: E402
from models.registry import create_model  # noqa: E402
from models.splits import SplitSpec, make_split, sample_by_task  # noqa: E402
from models.transfer import fine_tune  # noqa: E402
from storage.reports import format_table  # noqa: E402
from storage.seed import load_shards  # noqa: E402
from storage.store import Store  # noqa: E402
from tasks.training import TRANSFER_SPLIT  # noqa: E402

METRICS = ("peak1", "peak5", "pairwise")


def pretrain(data, family, params, seed, path):
    split = make_split(data, SplitSpec("by_task", seed=seed, valid_fraction=0.15,
                                       test_fraction=0.0))
    model = create_model(family, seed=seed, **params)
    info = model.fit(data.subset(split.train), data.subset(split.valid))
    model.save(path)
    return info["train_s"]


def scores(model, test):
    m = evaluate(model, test)
    return {k: m[k] for k in METRICS}


def mean_rows(runs):
    return {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store (default: the seed, loaded into a temp store)")
    parser.add_argument("--source", default=None,
                        help="source profile (default: the store's profile with most data)")
    parser.add_argument("--target", default=None,
                        help="target profile (default: the one with the next most data)")
    parser.add_argument("--family", default="mlp")
    parser.add_argument("--scratch-family", default=None,
                        help="family trained from scratch on the N samples (default: --family; "
                        "metaschedule_xgb = MetaSchedule's XGB, onboard's baseline)")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--ns", default="0,50,200,1000,all")
    parser.add_argument("--repeats", type=int, default=3, help="sample draws per N")
    parser.add_argument("--fractions", default="1.0,0.75,0.5,0.35")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-pruning", action="store_true", help="only the transfer table")
    args = parser.parse_args()

    work = scratch_dir("transfer")
    db = args.db or str(work / "seed.duckdb")
    if args.db is None:
        load_shards(db, progress=lambda _: None)
    params = {"epochs": args.epochs} if args.family in ("mlp", "attention",
                                                        "bilstm_attention") else {}
    if args.source is None or args.target is None:
        with Store(db, read_only=True) as store:
            ranked = [h for (h,) in store.query(
                "SELECT hardware FROM v_candidate_measurements WHERE error_kind IS NULL "
                "GROUP BY 1 ORDER BY count(*) DESC, 1")]
        ranked = [h for h in ranked if h not in (args.source, args.target)]
        args.source = args.source or ranked.pop(0)
        args.target = args.target or ranked.pop(0)
    source = load_dataset(db, DataSpec(hardware=(args.source,)))
    target = load_dataset(db, DataSpec(hardware=(args.target,)))
    split = make_split(target, SplitSpec(seed=args.seed, **TRANSFER_SPLIT))
    pool, test = split.train, target.subset(split.test)
    print(f"source {args.source}: {source.describe()}\ntarget {args.target}: "
          f"{target.describe()}; fine-tuning pool {pool.size}, test {len(test)} candidates of "
          f"{test.describe()['groups']} held-out tasks")

    single, multi = work / "pretrained", work / "pretrained-multihead"
    t_single = pretrain(source, args.family, params, args.seed, single)
    strategies = ["full", "residual"]
    if args.family in ("mlp", "attention", "bilstm_attention"):
        t_multi = pretrain(source, args.family, {**params, "head_per_hardware": True},
                           args.seed, multi)
        strategies += ["head", "multi_head"]
        print(f"pre-trained {args.family} in {t_single:.1f} s (multi-head {t_multi:.1f} s)")
    from models.registry import load_model

    rows = [("0", "pre-trained, no fine-tuning", *scores(load_model(single), test).values(),
             "")]
    results: dict[tuple[str, str], dict] = {}
    for n_text in args.ns.split(","):
        if n_text == "0":
            continue
        n = pool.size if n_text == "all" else int(n_text)
        if n > pool.size:
            print(f"skip N={n}: the pool has {pool.size}")
            continue
        draws = 1 if n == pool.size else args.repeats
        per_method: dict[str, list] = {}
        for r in range(draws):
            chosen = target.subset(sample_by_task(target, pool, n, args.seed + r))
            scratch = create_model(args.scratch_family or args.family, seed=args.seed + r,
                                   **({} if args.scratch_family else params))
            info = scratch.fit(chosen)
            per_method.setdefault("scratch", []).append(
                {**scores(scratch, test), "train_s": info["train_s"]})
            for strategy in strategies:
                parent = multi if strategy == "multi_head" else single
                model, info = fine_tune(parent, strategy, chosen, seed=args.seed + r)
                per_method.setdefault(strategy, []).append(
                    {**scores(model, test), "train_s": info["train_s"]})
        for method, runs in per_method.items():
            m = mean_rows(runs)
            results[(n_text, method)] = m
            rows.append((n_text if n_text == "all" else str(n),
                         f"from scratch: {args.scratch_family or args.family}"
                         if method == "scratch" else f"fine-tune: {method}",
                         *(round(m[k], 4) for k in METRICS), round(m["train_s"], 1)))
        print(f"N={n_text} done", flush=True)
    rows = [tuple(round(v, 4) if isinstance(v, float) else v for v in r) for r in rows]
    print(f"\nTransfer {args.source} -> {args.target}, {args.family}, held-out target tasks "
          f"(mean of {args.repeats} sample draws for N < all):")
    print(format_table(["N target", "method", "top1", "top5", "pairwise", "train s"], rows))
    if ("200", "scratch") in results and ("all", "scratch") in results:
        best = max((m["peak1"], k[1]) for k, m in results.items()
                   if k[0] == "200" and k[1] != "scratch")
        ref, base = results[("all", "scratch")]["peak1"], results[("200", "scratch")]["peak1"]
        print(f"\nN=200: best fine-tuned ({best[1]}) top1 {best[0]:.4f} = "
              f"{best[0] / ref:.3f} x scratch-on-all ({ref:.4f}) [target >= 0.95]; "
              f"{best[0] - base:+.4f} vs scratch on the same 200 ({base:.4f}) [target >= +0.10]")

    if args.no_pruning:
        return
    # ---- pruning: every profile, by_task, XGBoost
    everything = load_dataset(db, DataSpec(hardware=tuple(sorted({args.source, args.target}))))
    split = make_split(everything, SplitSpec("by_task", seed=args.seed, test_fraction=0.25,
                                             valid_fraction=0.0))
    train, test = everything.subset(split.train), everything.subset(split.test)
    prows = []
    for fraction in (float(f) for f in args.fractions.split(",")):
        for mode in (("tasks",) if fraction == 1.0 else ("tasks", "per_task")):
            kept = prune(train, PruneSpec(keep_fraction=fraction, mode=mode, seed=args.seed,
                                          hopeless_below=0.0 if fraction == 1.0 else 0.02))
            model = create_model("xgb", seed=args.seed)
            info = model.fit(train.subset(kept))
            m = scores(model, test)
            prows.append((fraction, "none" if fraction == 1.0 else mode,
                          round(kept.size / len(train), 3), kept.size,
                          *(round(m[k], 4) for k in METRICS), round(info["train_s"], 1)))
    print(f"\nPruning (xgb, by_task over {', '.join(everything.hardware_names)}; test = "
          f"{len(test)} candidates of held-out tasks):")
    print(format_table(["asked", "mode", "kept", "rows", "top1", "top5", "pairwise", "train s"],
                       prows))


if __name__ == "__main__":
    main()
