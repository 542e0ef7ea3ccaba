"""Where a cost model's network-level top-1 is lost on networks it never saw: each held-out
task's share of the gap, added up by how far off the pick was, by operator, by profile, and by
whether the pick's and the best candidate's main computation is vectorized.

Per network on a profile, 1 - top-1 = Σ_t w_t·(pick_t - best_t) / Σ_t w_t·pick_t (DESIGN.md
section 3: w_t the times the network runs task t, pick_t the latency of the model's top
candidate, best_t the task's best measured one). Each term is task t's share of the gap, so the
shares add up to the score exactly; spread over the report's averaging (the mean over networks
of the mean over the profiles that measured each), they add up to 1 - mean network top-1.

Training and data are bench/feature_sets.py's: one --family with --params, trained on each
seed's by_network split (the --holdout networks and every task they share are the test part),
the seed dataset plus --extra folders (or --db). Per seed it prints the gap by group and the
tasks that cost most; then the groups' median over the seeds.

    .venv/bin/python bench/rank_errors.py [--seeds 0,1,2] [--family lgbm] [--params JSON]
        [--holdout resnet50,mobilenet_v2,bert] [--hardware H1,H2] [--score-hardware H1,H2]
        [--extra DIR,DIR] [--db STORE] [--top 12] [--json OUT]

"Vectorized" is PerStoreFeature's vector length of the candidate's busiest store (the one with
the most arithmetic, Dataset.main_store): what TVM's schedule says, not what LLVM's own
vectorizers do with a loop left scalar.
"""

from __future__ import annotations

import argparse
import json
import re
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

from models.dataset import Dataset, DataSpec, load_dataset  # noqa: E402
from models.evaluate import network_instances, network_rows, network_topk  # noqa: E402
from models.metrics import expected_topk_min  # noqa: E402
from models.registry import create_model  # noqa: E402
from storage.reports import format_table  # noqa: E402

# How many times slower than the task's best the pick may be, per bucket (upper bounds)
RATIO_BUCKETS = ((1.1, "< 1.1x"), (1.5, "1.1-1.5x"), (2.0, "1.5-2x"), (4.0, "2-4x"),
                 (np.inf, ">= 4x"))
VECTOR_LENGTH = 18  # PerStoreFeature's vec_len: 16 op counts, then vec_num, vec_prod, vec_len
GROUPINGS = ("ratio", "operator", "vectorized", "hardware")


def operator(task_name: str) -> str:
    """A task's first operator, from its name: fused_conv2d7_add3 -> conv2d."""
    first = re.sub(r"^fused_", "", task_name).split("_")[0]
    return re.sub(r"\d+$", "", first) or task_name


def ratio_bucket(ratio: float) -> str:
    return next(name for bound, name in RATIO_BUCKETS if ratio < bound)


def task_shares(data: Dataset, scores: np.ndarray, networks: tuple[str, ...] = ()) -> list[dict]:
    """One row per task of each scored (network, profile): its share of 1 - mean network
    top-1, how much slower the pick is than the best (a tie at the top charged as the score
    charges it: its expectation), the pick's rank by latency, its operator
    and whether the pick's and the best's main stores are vectorized. The shares add up to
    1 - network_topk(data, scores, networks)["mean_network_top1"]."""
    vector = data.main_store()[:, VECTOR_LENGTH] > 0
    latency = np.where(np.isfinite(data.latency), data.latency, np.inf)
    instances = list(network_instances(data, networks))
    profiles_of: dict[str, int] = {}
    for net, *_ in instances:
        profiles_of[net] = profiles_of.get(net, 0) + 1
    out = []
    for net, hw, _rows, weights in instances:
        terms = []
        for group, weight in weights.items():
            rows = np.flatnonzero(data.group == group)
            if not np.isfinite(latency[rows].min()):
                continue  # no valid candidate: left out of the score too
            pick = rows[np.argsort(-scores[rows], kind="stable")[0]]  # the first of any tie
            charged = expected_topk_min(latency[rows], scores[rows], 1)  # as the score charges
            best = rows[np.argmin(latency[rows])]
            terms.append((group, weight, pick, charged, best, rows))
        picked = sum(t[1] * t[3] for t in terms)
        failed = [t for t in terms if not np.isfinite(t[3])]
        scale = 1.0 / (len(profiles_of) * profiles_of[net])
        for group, weight, pick, charged, best, rows in terms:
            if failed:  # a failed pick scores the network 0: the failed picks own the gap
                share = scale / len(failed) if not np.isfinite(charged) else 0.0
            else:
                share = scale * weight * (charged - latency[best]) / picked
            out.append({
                "network": net, "hardware": hw, "workload": str(data.group_workload[group]),
                "task": str(data.group_task_name[group]),
                "operator": operator(str(data.group_task_name[group])),
                "share": float(share), "ratio": float(charged / latency[best]),
                "rank": int((latency[rows] < charged).sum()), "candidates": rows.size,
                "vectorized": f"pick {'vec' if vector[pick] else 'scalar'}, "
                              f"best {'vec' if vector[best] else 'scalar'}"})
    return out


def by_group(rows: list[dict], key: str) -> dict[str, float]:
    """The shares summed per value of `key` ("ratio": the pick's ratio bucket)."""
    sums: dict[str, float] = {}
    for row in rows:
        name = ratio_bucket(row["ratio"]) if key == "ratio" else row[key]
        sums[name] = sums.get(name, 0.0) + row["share"]
    return sums


def group_table(per_seed: list[list[dict]], key: str) -> str:
    """A grouping's share of the gap: the median over seeds, and per seed."""
    sums = [by_group(rows, key) for rows in per_seed]
    names = sorted({n for s in sums for n in s}, key=lambda n: -np.median(
        [s.get(n, 0.0) for s in sums]))
    if key == "ratio":
        names = [name for _, name in RATIO_BUCKETS if name in names]
    rows = [(name, f"{np.median([s.get(name, 0.0) for s in sums]):.3f}",
             " / ".join(f"{s.get(name, 0.0):.3f}" for s in sums)) for name in names]
    return format_table([key, "gap share (median)", "per seed"], rows)


def top_tasks(rows: list[dict], n: int) -> str:
    worst = sorted(rows, key=lambda r: -r["share"])[:n]
    return format_table(
        ["share", "network", "profile", "task", "pick/best", "pick's rank", "vectorized"],
        [(f"{r['share']:.3f}", r["network"], r["hardware"], r["task"][:48], f"{r['ratio']:.2f}x",
          f"{r['rank']}/{r['candidates']}", r["vectorized"]) for r in worst])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    recipe_bench_options(parser, "also write every task's share here")
    parser.add_argument("--family", default="lgbm")
    parser.add_argument("--top", type=int, default=12, help="tasks listed per seed")
    args = parser.parse_args()
    params = parse_params(args.params)
    db = store_or_seed(args.db, "rank-errors", extra_folders(args.extra))
    hardware = profiles(db, args.hardware)
    # the model says which inputs it takes (a bag asks its members), as ship_model reads it
    probe = create_model(args.family, **params)
    start = time.perf_counter()
    data = load_dataset(db, DataSpec(hardware=hardware, traces=probe.takes_traces,
                                     asm=probe.takes_asm, latency=args.latency))
    holdout = tuple(args.holdout.split(","))
    print(f"data {data.describe()} ({time.perf_counter() - start:.0f} s); held out: "
          f"{', '.join(holdout)}; {args.family} {json.dumps(params)}", flush=True)
    per_seed, runs = [], []
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        test = scored_rows(test, args.score_hardware.split(",") if args.score_hardware else None)
        test = test.subset(network_rows(test, holdout))
        model = create_model(args.family, seed=seed, **params)
        model.fit(train, valid)
        scores = model.predict(test)
        top1 = network_topk(test, scores, holdout)["mean_network_top1"]
        rows = task_shares(test, scores, holdout)
        gap = sum(r["share"] for r in rows)
        print(f"\nseed {seed}: mean network top-1 {top1:.3f}, gap {1 - top1:.3f} "
              f"(task shares add up to {gap:.3f})\n{top_tasks(rows, args.top)}", flush=True)
        per_seed.append(rows)
        runs.append({"seed": seed, "mean_network_top1": top1, "tasks": rows})
    for key in GROUPINGS:
        print(f"\nthe gap by {key}, over seeds {args.seeds}:\n{group_table(per_seed, key)}")
    if args.json:
        Path(args.json).write_text(json.dumps({"data": data.describe(), "holdout": holdout,
                                               "latency": args.latency,
                                               "family": args.family, "params": params,
                                               "runs": runs}, indent=1, default=str))


if __name__ == "__main__":
    main()
