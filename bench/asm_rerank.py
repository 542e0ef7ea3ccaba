"""Instant tuning with and without re-ranking the model's picks by their code, side by side.

Per network and seed, instant tuning (tasks.instant: rank `--samples` sampled candidates a task
with `--model`, measure the top `--top`) runs three times:
- "model": the model's top `--top` are measured;
- "re-ranked": the model's top `--pool` are built, re-ordered by `--rerank-model` (an asm model,
  tasks.asm_rerank) and the top `--top` of that order are measured (same trials), on the
  tasks carrying `--share` of the FLOPs x occurrences (the others: as "model");
- "model, same time": as "model", then instant's second pass (more of the model's picks, by
  each task's share of the latency) until the re-ranked arm's search time is spent: what the
  builds' time buys when it measures instead.
The first two alternate which goes first; the third runs last (it needs the second's time).
Same samples (same seed). Reported: the estimated network latency (the tuned tasks' summed
best x occurrences, what the picks are for), end to end, the search's wall time and the
re-rank's build time; per seed each arm's ratio to "model", and their median.

    .venv/bin/python bench/asm_rerank.py --model DIR --rerank-model DIR
        [--networks resnet18,mobilenet_v2] [--hardware local-1t] [--samples 256] [--top 8]
        [--pool 32] [--share 1.0] [--seeds 0,1,2] [--json OUT]

Models are saved model folders (a store's models/<id>); their model.json says what trained
them. Give models that never saw the networks tuned (none of their tasks in training), or the
comparison flatters.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.asm_rerank import Rerank  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.tuning import tune_network  # noqa: E402

ARMS = ("model", "re-ranked")  # alternating; then SAME_TIME
SAME_TIME = "model, same time"
HEADER = ["network", "seed", "arm", "trials", "estimated ms", "end-to-end ms", "search s",
          "re-rank builds s"]


def lineage(path: str) -> str:
    """One line on what trained a saved model: family, profiles, rows, held-out networks."""
    saved = json.loads((Path(path) / "model.json").read_text())
    lineage = saved.get("lineage") or {}
    spec = lineage.get("data_spec") or {}
    return (f"{Path(path).name}: {saved.get('kind', '?')} on "
            f"{', '.join(spec.get('hardware', []))}, {len(spec.get('networks', []))} networks "
            f"(data {lineage.get('data_fingerprint', '?')}), asm columns: "
            f"{bool(spec.get('asm'))}")


def run_arm(arm: str, network: str, seed: int, profile, args, work: Path,
            seconds: float | None = None) -> dict:
    """One instant tuning run; `seconds`: a deadline, and trials enough to reach it."""
    result = tune_network(network, profile, work / f"{network}-{seed}-{arm.replace(', ', '-')}",
                          trials=10**6 if seconds else args.top,
                          minutes=seconds / 60 if seconds else None,
                          scheduler="instant", cost_model=args.model, population=args.samples,
                          flops_share=1.0, seed=seed, report=lambda _: None,
                          instant_top=args.top, hold_top=0,
                          rerank=Rerank(args.rerank_model, args.pool, args.share)
                          if arm == "re-ranked" else None)
    return {"network": network, "seed": seed, "arm": arm, "trials": result.trials,
            "estimated_ms": result.estimated_s * 1e3, "e2e_ms": result.tuned["latency_s"] * 1e3,
            "search_s": result.search_s,
            "rerank_build_s": (result.rerank or {}).get("build_s", 0.0),
            "rerank_failed": (result.rerank or {}).get("failed", 0)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="saved model folder ranking the samples")
    parser.add_argument("--rerank-model", required=True, help="saved asm model folder")
    parser.add_argument("--networks", default="resnet18,mobilenet_v2")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--pool", type=int, default=32, help="picks a task built, re-ordered")
    parser.add_argument("--share", type=float, default=1.0,
                        help="re-rank the tasks carrying this share of FLOPs x occurrences")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--json", help="also write the rows here")
    args = parser.parse_args()
    profile = resolve_profile(args.hardware)
    work = scratch_dir("asm-rerank")
    print(f"{profile.name}; {args.samples} sampled a task, top {args.pool} re-ranked (tasks "
          f"carrying {args.share:.0%} of the FLOPs), top {args.top} measured\nmodel: "
          f"{lineage(args.model)}\nre-rank model: {lineage(args.rerank_model)}", flush=True)
    rows = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        for network in [n for n in args.networks.split(",") if n]:
            order = ARMS if seed % 2 == 0 else ARMS[::-1]  # which arm goes first alternates
            for arm in [*order, SAME_TIME]:
                began = time.monotonic()
                rows.append(run_arm(arm, network, seed, profile, args, work, seconds=next(
                    r["search_s"] for r in reversed(rows) if r["arm"] == "re-ranked")
                    if arm == SAME_TIME else None))
                rows[-1]["wall_s"] = time.monotonic() - began
                print(format_table(HEADER, [_cells(rows[-1])]), flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps(rows, indent=1))
    print(format_table(HEADER, [_cells(r) for r in rows]))
    for network in sorted({r["network"] for r in rows}):
        for arm in ("re-ranked", SAME_TIME):
            pairs = [(a, b) for a in rows for b in rows if a["network"] == b["network"] == network
                     and a["seed"] == b["seed"] and a["arm"] == "model" and b["arm"] == arm]
            if not pairs:
                continue
            est = [b["estimated_ms"] / a["estimated_ms"] for a, b in pairs]
            e2e = [b["e2e_ms"] / a["e2e_ms"] for a, b in pairs]
            took = [b["search_s"] / a["search_s"] for a, b in pairs]
            print(f"{network}: {arm} / model, per seed: estimated "
                  f"{', '.join(f'{x:.3f}' for x in est)} (median {np.median(est):.3f}); end to "
                  f"end {', '.join(f'{x:.3f}' for x in e2e)} (median {np.median(e2e):.3f}); "
                  f"search time {', '.join(f'{x:.2f}' for x in took)} "
                  f"(median {np.median(took):.2f})")


def _cells(row: dict) -> list:
    return [row["network"], row["seed"], row["arm"], row["trials"], f"{row['estimated_ms']:.3f}",
            f"{row['e2e_ms']:.3f}", f"{row['search_s']:.0f}", f"{row['rerank_build_s']:.0f}"]


if __name__ == "__main__":
    main()
