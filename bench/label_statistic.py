"""Labels from the mean or the median of a measurement's repeats: which is the program's latency,
and what each does to a cost model's score on networks it never saw.

A measurement times a candidate several times (run_secs); the store keeps their mean, as
MetaSchedule's runner reports it. On a shared VM one repeat can be an OS hiccup (a 9 ms kernel
timed once at 149 ms), and the mean carries it into the label. Two parts:
- --remeasure N: time again N "spiky" candidates of the profile (stored mean over 1.5x the
  median of its repeats) and N calm ones (under 1.05x), on this machine, and say whether the
  stored mean or the stored median is the closer to the fresh median. Resumes from --results.
- the models: the recipe (lgbm; --params) trained on each statistic's labels and scored on
  each, on the same by_network splits (--holdout), per seed: network-level top-1 / top-5,
  peak@1, pairwise. "scored on mean" is every earlier leaderboard's charge.

    .venv/bin/python bench/label_statistic.py --db STORE --hardware cpu-znver4-avx512-1t \
        [--params RECIPE_JSON] [--seeds 0,1,2] [--remeasure 100 --results FILE.jsonl] [--json OUT]
    .venv/bin/python bench/label_statistic.py --db STORE --hardware H1,H2,... --seeds 0,1,2,3,4,5
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import held_out_parts, parse_params, spread  # noqa: E402
from tenforge.cli import bootstrap  # noqa: E402

RECIPE = {"trace_features": True, "tile_features": True, "task_weight_power": 0.25,
          "main_store": True, "store_max": True}  # "tw main max" (docs/cost-models.md)
KEYS = ("mean_network_top1", "mean_network_top5", "peak1", "pairwise")
SPIKY, CALM = 1.5, 1.05  # stored mean / median of its repeats


def spiky_or_calm(mean: float, median: float) -> str | None:
    """A measurement's kind by its stored mean against the median of its repeats."""
    return "spiky" if mean / median > SPIKY else "calm" if mean / median < CALM else None


def spiky_and_calm(db: str, hardware: str, n: int, seed: int = 0) -> list[tuple]:
    """Up to n spiky and n calm measured candidates of `hardware` (over 0.2 ms, where a
    kernel's time is more than the timer's own), drawn with `seed`: (candidate_id, stored mean,
    stored median, workload_hash, mod_json, trace_json, flops)."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        rows = store.query(
            "SELECT c.candidate_id, list_avg(m.run_secs), list_median(m.run_secs), "
            "t.workload_hash, t.mod_json, c.trace_json, t.flops FROM measurements m "
            "JOIN candidates c USING (candidate_id) JOIN tasks t USING (task_id) "
            "JOIN hardware h USING (hardware_id) WHERE h.name = ? AND m.error_kind IS NULL "
            "AND len(m.run_secs) > 0 AND list_median(m.run_secs) > 2e-4 "
            "ORDER BY c.candidate_id", [hardware])
    rng = np.random.default_rng(seed)
    out = []
    for kind in ("spiky", "calm"):
        pool = [r for r in rows if spiky_or_calm(r[1], r[2]) == kind]
        out += [pool[i] for i in sorted(rng.choice(len(pool), min(n, len(pool)), replace=False))]
    return out


def remeasure(db: str, hardware: str, n: int, results: Path) -> list[dict]:
    """Time the spiky and calm candidates again (those `results` lacks, with
    bench/label_noise.py's resumable loop, a JSON line each) and return each fresh measurement
    with its stored mean and median."""
    from bench.label_noise import measure_missing, read_results
    from tasks.hardware import check_runnable_here, resolve_profile

    profile = resolve_profile(hardware)
    check_runnable_here(profile)
    rows = spiky_and_calm(db, hardware, n)
    measure_missing(profile, [r[0] for r in rows], {r[0]: r[3:] for r in rows}, results, 32)
    fresh = read_results(results)
    return [{**fresh[r[0]], "stored_mean": r[1], "stored_median": r[2]}
            for r in rows if r[0] in fresh]


def closeness(records: list[dict]) -> dict[str, dict]:
    """Per kind (spiky, calm): how far the stored mean and median lie from the fresh median
    (median |log ratio|), how often the median is the closer, and how often the fresh
    measurement spikes again."""
    out = {}
    for kind in ("spiky", "calm"):
        rows = [r for r in records if r["run_secs"] and not r["error_kind"]
                and spiky_or_calm(r["stored_mean"], r["stored_median"]) == kind]
        if not rows:
            continue
        fresh = np.array([np.median(r["run_secs"]) for r in rows])
        fresh_mean = np.array([np.mean(r["run_secs"]) for r in rows])
        mean = np.abs(np.log(np.array([r["stored_mean"] for r in rows]) / fresh))
        median = np.abs(np.log(np.array([r["stored_median"] for r in rows]) / fresh))
        out[kind] = {"candidates": len(rows), "mean_off": float(np.median(mean)),
                     "median_off": float(np.median(median)),
                     "median_closer": float(np.mean(median < mean)),
                     "spiky_again": float(np.mean(fresh_mean / fresh > SPIKY))}
    return out


def score_both(db: str, hardware: tuple[str, ...], params: dict, holdout: tuple[str, ...],
               seeds: list[int]) -> list[dict]:
    """Each seed's (trained on, scored on) scores, for both statistics, one model over the
    profiles' rows pooled."""
    from models.dataset import LATENCY_STATISTICS, DataSpec, load_dataset
    from models.evaluate import network_rows, network_topk, ranking_metrics
    from models.registry import create_model

    probe = create_model("lgbm", **params)
    data = {s: load_dataset(db, DataSpec(hardware=hardware, traces=probe.takes_traces,
                                         asm=probe.takes_asm, latency=s))
            for s in LATENCY_STATISTICS}
    assert (data["mean"].candidate_id == data["median"].candidate_id).all()
    print(f"data {data['mean'].describe()}; labels moved by over 0.05: "
          f"{np.mean(np.abs(data['mean'].label - data['median'].label) > 0.05):.1%}", flush=True)
    runs = []
    for seed in seeds:
        parts = {s: held_out_parts(d, seed, holdout) for s, d in data.items()}
        tests = {s: p[2].subset(network_rows(p[2], holdout)) for s, p in parts.items()}
        for trained in LATENCY_STATISTICS:
            model = create_model("lgbm", seed=seed, **params)
            model.fit(*parts[trained][:2])
            for scored, test in tests.items():
                scores = model.predict(test)
                result = {**network_topk(test, scores, holdout), **ranking_metrics(test, scores)}
                runs.append({"seed": seed, "trained": trained, "scored": scored,
                             **{k: float(result[k]) for k in KEYS},
                             "networks": {n: float(v["top1"])
                                          for n, v in result["networks"].items()}})
                print(f"  seed {seed}, trained on {trained}, scored on {scored}: network top-1 "
                      f"{result['mean_network_top1']:.3f}", flush=True)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="store to read")
    parser.add_argument("--hardware", required=True,
                        help="a profile of the store (the models: comma-separated profiles "
                             "pool; --remeasure: one, runnable here)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--params", default=json.dumps(RECIPE), help="the lgbm recipe (JSON)")
    parser.add_argument("--remeasure", type=int, default=0,
                        help="time again this many spiky and this many calm candidates "
                             "(the profile must run here; 0: none)")
    parser.add_argument("--results", type=Path, default=Path("data/label-statistic.jsonl"),
                        help="the re-measurements, a JSON line each (resumes)")
    parser.add_argument("--json", help="also write every number here")
    args = parser.parse_args()
    params = parse_params(args.params)
    bootstrap()
    from storage.reports import format_table

    report: dict = {"hardware": args.hardware, "db": args.db, "params": params}
    if args.remeasure:
        if "," in args.hardware:
            raise SystemExit("--remeasure times one profile's candidates on this machine; "
                             f"give one profile, not {args.hardware}")
        start = time.perf_counter()
        args.results.parent.mkdir(parents=True, exist_ok=True)
        records = remeasure(args.db, args.hardware, args.remeasure, args.results)
        report["remeasured"] = closeness(records)
        print(f"\nre-measured on this machine ({time.perf_counter() - start:.0f} s); median "
              "|log(stored / fresh median)|:")
        print(format_table(["candidates", "n", "stored mean off", "stored median off",
                            "median closer", "spiky again"],
                           [(k, v["candidates"], f"{v['mean_off']:.3f}", f"{v['median_off']:.3f}",
                             f"{v['median_closer']:.0%}", f"{v['spiky_again']:.0%}")
                            for k, v in report["remeasured"].items()]))
    seeds = [int(s) for s in args.seeds.split(",") if s]
    if seeds:
        runs = score_both(args.db, tuple(args.hardware.split(",")), params,
                          tuple(args.holdout.split(",")), seeds)
        report.update(holdout=args.holdout, seeds=seeds, runs=runs)
        rows = [(f"trained on {t}", f"scored on {s}",
                 *(spread([r[k] for r in runs if (r["trained"], r["scored"]) == (t, s)], 3)
                   for k in KEYS))
                for t in ("mean", "median") for s in ("mean", "median")]
        print(f"\n{args.hardware}, held out {args.holdout}, seeds {args.seeds} "
              "(median, min-max):")
        print(format_table(["labels", "charged", *KEYS], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))


if __name__ == "__main__":
    main()
