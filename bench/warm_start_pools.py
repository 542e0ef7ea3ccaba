"""How good are a warm start's candidate pools? Random samples, the model's picks, transfers,
model-only evolution.

For each named task of a stored network, measures side by side on this machine (each
candidate once, through the collect path's measurer) the pools named by --pools:
  random        the first 32 of 128 random samples of its design space
  top4          the model's top 4 of those 128 (--samples): what a warm start measures
                (tasks.instant)
  transfers     32 candidates made from other tasks' fastest stored schedules on the profile
                (tasks.schedule_transfer; the --holdout networks lend none)
  top4+xfer     the model's top 4 of the 128 samples and the 32 transfers
  evolved       the model's top 4 after model-only evolution (tasks.model_evolution): the top
                16 samples breed --generations generations of --children, nothing measured
and prints each pool's best and median ms. docs/tuning-results.md (thirty-fourth and
thirty-fifth sessions):

    .venv/bin/python bench/warm_start_pools.py --db STORE --model MODEL_PATH \
        --hardware local-1t --network mobilenet_v2+nchw16c --holdout mobilenet_v2,resnet18,bert \
        --tasks fused_conv2d_NCHWc6_add31_maximum9_minimum9,... [--pools random,top4,evolved]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks.model_evolution import CHILDREN, GENERATIONS  # (after the path)

POOLS = ("random", "top4", "transfers", "top4+xfer", "evolved")
SAMPLES = 128


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="store with the network's tasks and data")
    parser.add_argument("--model", required=True, help="a saved tenforge model's folder")
    parser.add_argument("--hardware", default="local-1t", help="profile to measure on")
    parser.add_argument("--network", required=True, help="stored network name (with +GRAPH)")
    parser.add_argument("--tasks", required=True, help="comma-separated task names")
    parser.add_argument("--input-size", type=int, default=None,
                        help="the network's stored input size, where the store holds it at "
                             "several (a task name may recur: bert@64 and bert@128)")
    parser.add_argument("--batch-size", type=int, default=1, help="the network's stored batch")
    parser.add_argument("--holdout", default="", help="networks whose tasks lend nothing")
    parser.add_argument("--pools", default=",".join(POOLS),
                        help=f"comma-separated pools to measure, of {', '.join(POOLS)}")
    parser.add_argument("--generations", type=int, default=GENERATIONS, help="evolved: generations")
    parser.add_argument("--children", type=int, default=CHILDREN,
                        help="evolved: children a generation")
    parser.add_argument("--samples", type=int, default=SAMPLES,
                        help="random samples the model ranks (top4, top4+xfer, evolved)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    pools = [p for p in args.pools.split(",") if p]
    if not pools or any(p not in POOLS for p in pools):
        raise SystemExit(f"--pools {args.pools!r}: choose from {', '.join(POOLS)}")

    from models.registry import load_model
    from storage.store import Store
    from tasks.hardware import resolve_profile
    from tasks.instant import score_candidates
    from tasks.measure import MeasureJob, Measurer
    from tasks.model_evolution import Scored, evolve
    from tasks.sampling import sample_candidates
    from tasks.schedule_transfer import load_library, transfer_candidates

    profile = resolve_profile(args.hardware)
    names = [n for n in args.tasks.split(",") if n]
    with Store(args.db, read_only=True) as store:
        library = (load_library(store, profile.name, [n for n in args.holdout.split(",") if n])
                   if {"transfers", "top4+xfer"} & set(pools) else [])
        tasks = store.query(
            "SELECT t.workload_hash, t.task_name, t.flops, t.mod_json FROM network_tasks nt "
            "JOIN networks n USING (network_id) JOIN tasks t USING (task_id) WHERE n.name = ? "
            "AND n.batch = ? AND (? IS NULL OR n.input_size = ?) "
            "AND t.task_name IN (SELECT unnest(?::VARCHAR[]))",
            [args.network, args.batch_size, args.input_size, args.input_size, names])
    found = [name for _, name, _, _ in tasks]
    if sorted(found) != sorted(names):
        missing = [n for n in names if n not in found]
        where = f"{args.network} (batch {args.batch_size}, size {args.input_size or 'any'})"
        raise SystemExit(f"{where} in {args.db}: " + (
            f"no task(s) {', '.join(missing)}" if missing
            else "a task name recurs at several sizes: name one with --input-size"))
    model = load_model(args.model)
    hardware = np.array(profile.feature_vector(), np.float32)

    def score(candidates):
        return score_candidates(model, profile.name, hardware, candidates)

    def ranked(candidates):
        return [candidates[i] for i in np.argsort(-score(candidates), kind="stable")]

    if library:
        print(f"library: {len(library)} schedules on {profile.name}")
    print("ms per run, best / median of each pool")
    next_id = 0
    with Measurer(profile) as measurer:
        for workload, name, flops, mod_json in tasks:
            samples, _ = sample_candidates(mod_json, profile.target, args.samples, args.seed)
            # the samples with the model's scores, best first (top4 and evolved's parents)
            by_score = sorted((Scored(c, float(s)) for c, s in zip(samples, score(samples))),
                              key=lambda s: -s.score)
            made: dict[str, list] = {}
            notes = []
            if "random" in pools:
                made["random"] = samples[:32]
            if "top4" in pools:
                made["top4"] = [s.candidate for s in by_score[:4]]
            if {"transfers", "top4+xfer"} & set(pools):
                lent = transfer_candidates(mod_json, profile.target, library, flops, 32,
                                           known_hashes={c.schedule_hash for c in samples})
                if "transfers" in pools:
                    made["transfers"] = lent
                if "top4+xfer" in pools:
                    made["top4+xfer"] = ranked(samples + lent)[:4]
            if "evolved" in pools:
                started = time.monotonic()
                children = evolve(mod_json, profile.target, by_score, score, args.seed,
                                  generations=args.generations, children=args.children)
                best = sorted(by_score + children, key=lambda s: -s.score)[:4]
                made["evolved"] = [s.candidate for s in best]
                notes.append(f"evolved: {len(children)} children in "
                             f"{time.monotonic() - started:.1f} s, "
                             f"{sum(s in children for s in best)} of its top 4")
            cells = []
            for label, pool in made.items():
                # the task's own workload hash: the measurer caches the module under it
                results = measurer.measure([MeasureJob(next_id + i, workload, mod_json,
                                                       c.trace_json, flops)
                                            for i, c in enumerate(pool)])
                next_id += len(pool)
                ms = sorted(float(np.mean(r.run_secs)) * 1e3 for r in results if not r.error_kind)
                cells.append(f"{label}: {ms[0]:.3f} / {ms[len(ms) // 2]:.3f} "
                             f"({len(ms)}/{len(pool)} ran)" if ms else f"{label}: none ran")
            print(f"{name}: " + " | ".join(cells) + ("  [" + "; ".join(notes) + "]"
                                                     if notes else ""), flush=True)


if __name__ == "__main__":
    main()
