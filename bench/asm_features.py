"""What the compiled code adds to a cost model on networks it never saw: the same recipe with and
without the assembly columns (models/asm_features.py), on the same rows, on one CPU profile.

Each row's columns cost a rebuild of the candidate (tasks/compiled_code.py, ~0.2 s a core), so
the training part is a seeded share of its tasks (--train-tasks, every row of a chosen task; the
validation part gets the same share), and the held-out networks' rows of the profile are
scored whole. Arms, each trained on the same split with the same seed:
- "recipe, all tasks": the recipe on the whole training part (no assembly: what it scores today);
- "recipe": the recipe on the chosen share of tasks;
- "recipe + asm": the same share, with the assembly columns;
- the first arm's top --rerank picks of each task re-ordered by the third's scores: a cheap
  model ranks every candidate and only its favourites are built (no new training).
Scores: TenSet's network-level top-1 and top-5 (mean over the held-out networks), peak@1,
pairwise; median over the seeds and per seed.

    .venv/bin/python bench/asm_features.py --db STORE --hardware CPU_PROFILE \
        [--holdout resnet50,mobilenet_v2,bert] [--seeds 0,1,2] [--train-tasks 0.25] \
        [--params RECIPE_JSON] [--rerank 8] [--processes 2] [--cache FILE.npz] [--json OUT]

The cache keeps every row's assembly across runs (it belongs to --db): a run that stops
resumes, and a change to the columns reads them again without a build.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import held_out_parts, parse_params, spread  # noqa: E402
from bench.feature_sets import task_subsets  # noqa: E402
from tenforge.cli import bootstrap  # noqa: E402

RECIPE = {"trace_features": True, "tile_features": True, "task_weight_power": 0.25,
          "main_store": True, "store_max": True}  # "tw main max" (docs/cost-models.md)
KEYS = ("mean_network_top1", "mean_network_top5", "peak1", "pairwise")


def arms(params: dict) -> list[tuple[str, dict, bool]]:
    """(name, params, on the share of tasks) of each arm."""
    return [("recipe, all tasks", params, False), ("recipe", params, True),
            ("recipe + asm", {**params, "asm_features": True}, True)]


def rerank_name(n: int) -> str:
    return f"recipe, all tasks; its top {n} re-ranked by recipe + asm"


def rerank_top(first: np.ndarray, second: np.ndarray, group: np.ndarray, n: int) -> np.ndarray:
    """Scores that order each group's top `n` by `first` among themselves by `second`, above
    the group's other rows, which keep `first`'s order: a cheap model ranks every candidate,
    and only its favourites are built for their assembly."""
    out = np.empty(len(first))
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        order = rows[np.argsort(-first[rows], kind="stable")]
        top = order[:n][np.argsort(-second[order[:n]], kind="stable")]
        out[np.r_[top, order[n:]]] = -np.arange(rows.size, dtype=np.float64)
    return out


def asm_gain(model) -> dict[str, float]:
    """Each assembly column's share of a LightGBM model's total split gain, largest first, the
    block's sum under "all" (the block is the last of the inputs, models/_trees.tree_inputs)."""
    from models.asm_features import ASM_NAMES

    gain = model.booster.feature_importance("gain", iteration=model.best_iteration)
    share = gain[-len(ASM_NAMES):] / max(gain.sum(), 1e-12)
    ranked = sorted(zip(ASM_NAMES, share.tolist()), key=lambda item: -item[1])
    return {"all": float(share.sum()), **dict(ranked)}


def check_args(train_tasks: float, hardware: str, processes: int, rerank: int = 8) -> None:
    """A one-line refusal of a share outside (0, 1], anything but one CPU profile, no build
    process or nothing to re-rank: before minutes of loading."""
    if not 0 < train_tasks <= 1:
        raise SystemExit(f"--train-tasks {train_tasks}: give a share above 0, at most 1")
    if "," in hardware or not hardware.startswith("cpu-"):
        raise SystemExit(f"--hardware {hardware}: give one CPU profile (the columns read x86 "
                         "assembly); `tenforge query \"SELECT name FROM hardware\"` lists them")
    if processes < 1:
        raise SystemExit(f"--processes {processes}: give 1 or more build processes")
    if rerank < 2:
        raise SystemExit(f"--rerank {rerank}: give 2 or more picks to re-order")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="store to read (a collecting store, or "
                        "the seed loaded with `tenforge ingest`)")
    parser.add_argument("--hardware", required=True, help="one CPU profile of the store")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--train-tasks", type=float, default=0.25,
                        help="share of the training part's tasks the arms train on (0-1]")
    parser.add_argument("--params", default=json.dumps(RECIPE), help="the lgbm recipe (JSON)")
    parser.add_argument("--rerank", type=int, default=8,
                        help="the re-ranking arm builds this many of each task's top picks")
    parser.add_argument("--processes", type=int, default=2, help="build processes")
    parser.add_argument("--cache", type=Path, help=".npz keeping every row's assembly (resumable)")
    parser.add_argument("--json", help="also write every number here")
    args = parser.parse_args()
    check_args(args.train_tasks, args.hardware, args.processes, args.rerank)
    params = parse_params(args.params)
    bootstrap()
    from models.dataset import DataSpec, load_dataset
    from models.evaluate import network_rows, network_topk, ranking_metrics
    from models.registry import create_model
    from storage.reports import format_table
    from tasks.compiled_code import asm_features

    start = time.perf_counter()
    data = load_dataset(args.db, DataSpec(hardware=(args.hardware,), traces=True))
    holdout = tuple(args.holdout.split(","))
    print(f"data {data.describe()} ({time.perf_counter() - start:.0f} s); held out: "
          f"{', '.join(holdout)}; lgbm {json.dumps(params)}", flush=True)
    runs = []
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        test = test.subset(network_rows(test, holdout))
        (_, few), = task_subsets(train, seed, [args.train_tasks])
        (_, few_valid), = task_subsets(valid, seed, [args.train_tasks])
        print(f"seed {seed}: {len(few)} training rows of {len(train)} "
              f"({args.train_tasks:g} of the tasks), {len(few_valid)} validation, "
              f"{len(test)} held-out", flush=True)
        ids = np.concatenate([few.candidate_id, few_valid.candidate_id, test.candidate_id])
        columns = dict(zip(ids.tolist(), asm_features(
            args.db, ids.tolist(), args.processes, args.cache,
            lambda line: print(f"  {line}", flush=True))))
        with_asm = [replace(part, asm=np.stack([columns[int(c)] for c in part.candidate_id]))
                    for part in (few, few_valid, test)]
        run = {"seed": seed, "rows": {"train": len(few), "train_all": len(train),
                                      "valid": len(few_valid), "test": len(test)},
               "asm_failed": int(np.isnan(with_asm[2].asm[:, 0]).sum()), "arms": {}}
        scores = {}
        for name, arm_params, on_share in arms(params):
            fit_train, fit_valid, scored = (with_asm if on_share else (train, valid, test))
            model = create_model("lgbm", seed=seed, **arm_params)
            tic = time.perf_counter()
            model.fit(fit_train, fit_valid)
            scores[name] = model.predict(scored)
            result = {**network_topk(scored, scores[name], holdout),
                      **ranking_metrics(scored, scores[name])}
            run["arms"][name] = {k: float(result[k]) for k in KEYS}
            if arm_params.get("asm_features"):
                run["asm_gain"] = asm_gain(model)
                print("  the asm block's share of the trees' gain: " + ", ".join(
                    f"{k} {v:.3f}" for k, v in list(run["asm_gain"].items())[:6]), flush=True)
            print(f"  {name}: network top-1 {result['mean_network_top1']:.3f}, top-5 "
                  f"{result['mean_network_top5']:.3f} ({time.perf_counter() - tic:.0f} s)",
                  flush=True)
        reranked = rerank_top(scores["recipe, all tasks"], scores["recipe + asm"], test.group,
                              args.rerank)
        result = {**network_topk(test, reranked, holdout), **ranking_metrics(test, reranked)}
        run["arms"][rerank_name(args.rerank)] = {k: float(result[k]) for k in KEYS}
        print(f"  {rerank_name(args.rerank)}: network top-1 {result['mean_network_top1']:.3f}, "
              f"top-5 {result['mean_network_top5']:.3f}", flush=True)
        runs.append(run)
    names = [name for name, _, _ in arms(params)] + [rerank_name(args.rerank)]
    rows = [(name, *(spread([r["arms"][name][k] for r in runs], 3) for k in KEYS))
            for name in names]
    print(f"\n{args.hardware}, held out {', '.join(holdout)}, seeds {args.seeds}, training "
          f"share {args.train_tasks:g} of the tasks (median, min-max):")
    print(format_table(["arm", *KEYS], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"hardware": args.hardware, "holdout": holdout, "params": params,
             "train_tasks": args.train_tasks, "data": data.describe(), "runs": runs},
            indent=1, default=str))


if __name__ == "__main__":
    main()
