"""Instant tuning (retune --scheduler instant) against the untuned build and PyTorch eager.

For each network and seed: pre-train a model on the seed's other profiles (xgb, so no data of
the target is used), then tune every task instantly (rank `--samples` sampled candidates per
task with the model, measure the top `--top`), compile and time it end to end on the profile's
threads, beside the untuned build and PyTorch eager at the same thread count, in one run.

    .venv/bin/python bench/instant.py [--networks resnet18,mobilenet_v2] [--hardware local]
        [--samples 256] [--top 8] [--seeds 0,1,2]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from bench.tuning import torch_eager_ms  # noqa: E402
from storage.reports import format_table  # noqa: E402
from storage.seed import load_shards  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.training import default_hardware, pretrain  # noqa: E402
from tasks.tuning import tune_network  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="resnet18,mobilenet_v2")
    parser.add_argument("--hardware", default="local", help="profile to tune on (this machine)")
    parser.add_argument("--samples", type=int, default=256, help="candidates ranked per task")
    parser.add_argument("--top", type=int, default=8, help="candidates measured per task")
    parser.add_argument("--seeds", default="0,1,2")
    args = parser.parse_args()
    profile = resolve_profile(args.hardware)
    work = scratch_dir("instant")
    db = str(work / "seed.duckdb")
    load_shards(db, progress=lambda _: None)
    sources = [h for h in default_hardware(db) if h != profile.name]
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        model = pretrain(db, sources, [], "xgb", {}, None, seed, None, log=lambda _: None)
        for network in [n for n in args.networks.split(",") if n]:
            began = time.monotonic()
            result = tune_network(network, profile, work / f"{network}-{seed}",
                                  trials=args.top, scheduler="instant",
                                  cost_model=model["path"], population=args.samples,
                                  flops_share=1.0, seed=seed, report=lambda _: None,
                                  instant_top=args.top)
            wall = time.monotonic() - began
            eager = torch_eager_ms(network, profile.num_threads, runs=30)
            tuned = result.tuned["latency_s"] * 1e3
            rows.append((network, seed, result.trials, round(result.search_s, 1),
                         round(wall, 1), round(result.untuned["latency_s"] * 1e3, 3),
                         round(tuned, 3), round(eager, 3), round(eager / tuned, 2),
                         f"{result.tuned['tuned_functions']}/{result.tuned['tir_functions']}"))
            print(format_table(["network", "seed", "measured", "search s", "wall s",
                                "untuned ms", "instant ms", "torch eager ms",
                                "speedup vs torch", "functions tuned"], rows[-1:]),
                  flush=True)
    print(f"\n{profile.name} ({profile.num_threads} threads), {args.samples} candidates ranked "
          f"and {args.top} measured per task, model: xgb pre-trained on "
          f"{', '.join(sources)} (no data of this profile); wall s includes import, sampling, "
          "measuring and both end-to-end timings.")
    print(format_table(["network", "seed", "measured", "search s", "wall s", "untuned ms",
                        "instant ms", "torch eager ms", "speedup vs torch", "functions tuned"],
                       rows))
    for network in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == network]
        ratios = [r[8] for r in mine]
        print(f"{network}: median speedup vs PyTorch eager {np.median(ratios):.2f}x "
              f"(min {min(ratios):.2f}, max {max(ratios):.2f}); median wall "
              f"{np.median([r[4] for r in mine]):.0f} s over {len(mine)} seeds")


if __name__ == "__main__":
    main()
