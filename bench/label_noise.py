"""How well can any cost model rank held-out networks, given how noisy the stored labels are?

Issue 19 asks for a mean network-level top-1 of 0.85 on held-out networks, on every CPU
profile. The score ranks a task's candidates by a model's prediction and charges the *stored*
latency of its pick against the best *stored* latency of the task (models/metrics.py). A stored
latency is one measurement: where a task's best candidates are within measurement noise of each
other, even a model that knew every program's true speed loses points to the noise.

This bench re-measures the stored candidates of some networks on the machine the profile
names (this one) and uses each round as a ranker: candidates ranked by their fresh latency,
charged the stored one. That is what a perfect model would score if the stored labels carried
one measurement's noise and the ranking another (pessimistic: a perfect model has no noise of
its own; the true ceiling lies between this and 1.0). With a model (`--model shipped`) it
scores the model against every label set too: the stored latencies, each round's, and the
geometric mean of them all (the least noisy labels there are). It also prints how each round's
latency of a candidate compares with the stored one.

    .venv/bin/python bench/label_noise.py --db STORE --hardware local-1t \
        --networks resnet50@224,mobilenet_v2@224,bert@128 --results data/label-noise/r1.jsonl
    .venv/bin/python bench/label_noise.py ... --results data/label-noise/r2.jsonl \
        --also data/label-noise/r1.jsonl --model shipped

Fresh latencies are appended to --results as they come (one JSON line per candidate), so a
stopped run resumes where it was; --score-only measures nothing more and scores what it has.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from core.errors import TenforgeError  # noqa: E402


def load_rows(db: str, hardware: str, networks: tuple[str, ...], per_task: int,
              extractor: str = "per_store_feature_v1", traces: bool = False):
    """The stored sampled candidates of `networks` on `hardware` (a Dataset), at most
    `per_task` a task (the first in content order; 0: all), and their (workload_hash, mod_json,
    trace_json, flops)."""
    from models.dataset import DataSpec, load_dataset
    from models.evaluate import network_rows
    from storage.store import Store

    data = load_dataset(db, DataSpec(hardware=(hardware,), networks=tuple(
        sorted({n.split("@")[0] for n in networks})), sources=("sampled",),
        extractor=extractor, traces=traces))
    # a label with a size (resnet50@224) keeps that instance's tasks only
    data = data.subset(network_rows(data, networks))
    keep = np.concatenate([np.flatnonzero(data.group == g)[:per_task or None]
                           for g in np.unique(data.group)])
    data = data.subset(np.sort(keep))
    with Store(db, read_only=True) as store:
        rows = store.con.execute(
            "SELECT c.candidate_id, t.workload_hash, t.mod_json, c.trace_json, t.flops "
            "FROM candidates c JOIN tasks t USING (task_id) "
            "WHERE c.candidate_id IN (SELECT unnest(?))",
            [data.candidate_id.tolist()]).fetchall()
    return data, {r[0]: r[1:] for r in rows}


def read_results(path: Path) -> dict[int, dict]:
    """Candidate id -> its re-measurement. A line cut short by a kill is skipped: that
    candidate is measured again."""
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            continue
        out[rec["candidate_id"]] = rec
    return out


def measure_missing(profile, candidate_ids, sources: dict, results: Path, batch: int) -> None:
    """Measure the candidates that `results` lacks (`sources`: id -> (workload_hash, mod_json,
    trace_json, flops)), appending each as it comes."""
    from tasks.measure import MeasureJob, Measurer

    done = read_results(results)
    todo = [int(c) for c in candidate_ids if int(c) not in done]
    print(f"{len(done)} already re-measured, {len(todo)} to go", flush=True)
    if not todo:
        return
    start = time.perf_counter()
    with Measurer(profile) as measurer, results.open("a") as out:
        for at in range(0, len(todo), batch):
            jobs = [MeasureJob(c, *sources[c]) for c in todo[at:at + batch]]
            for r in measurer.measure(jobs):
                out.write(json.dumps({"candidate_id": r.candidate_id,
                                      "run_secs": list(r.run_secs),
                                      "error_kind": r.error_kind}) + "\n")
            out.flush()
            n = min(at + batch, len(todo))
            rate = n / (time.perf_counter() - start) * 60
            print(f"  {n}/{len(todo)} re-measured ({rate:.0f}/min)", flush=True)


def network_top1(data, latency: np.ndarray, scores: np.ndarray,
                 networks: tuple[str, ...]) -> dict:
    """TenSet's network-level top-1 and top-5 of ranking by `scores`, charged `latency`."""
    from models.evaluate import network_topk

    report = network_topk(dataclasses.replace(data, latency=latency), scores, networks)
    return {k: report[k] for k in ("networks", "mean_network_top1", "mean_network_top5")}


def round_latency(data, fresh: dict[int, dict]) -> np.ndarray:
    """Each candidate's mean latency in one round of re-measurement (inf: failed there)."""
    return np.array([np.mean(fresh[int(c)]["run_secs"]) if fresh[int(c)]["run_secs"]
                     else np.inf for c in data.candidate_id])


def noise_report(data, rounds: dict[str, dict[int, dict]], networks: tuple[str, ...],
                 model=None) -> dict:
    """Each ranker (the stored measurement, each round of re-measurement, `model`) charged
    each label (the stored latency, each round's, the geometric mean of them all): network
    top-1/top-5, on the candidates every round has; and how each round agrees with the
    stored latency of a candidate."""
    have = np.array([all(int(c) in r for r in rounds.values()) for c in data.candidate_id])
    data = data.subset(np.flatnonzero(have))
    stored = data.latency
    fresh = {name: round_latency(data, r) for name, r in rounds.items()}
    every = [stored, *fresh.values()]
    labels = {"stored": stored, **fresh,  # inf where any failed
              "geomean of all": np.exp(np.mean(np.log(every), axis=0))}
    rankers = {"stored": -np.log(stored), **{name: -np.log(lat) for name, lat in fresh.items()}}
    if model is not None:
        rankers["model"] = model.predict(data)
    table = {r: {lbl: network_top1(data, latency, scores, networks)
                 for lbl, latency in labels.items()} for r, scores in rankers.items()}
    agreement = {}
    for name, lat in fresh.items():
        both = np.isfinite(lat) & np.isfinite(stored)
        ratio = lat[both] / stored[both]
        agreement[name] = {
            "ratio_median": float(np.median(ratio)),
            "ratio_p10_p90": [float(np.percentile(ratio, 10)), float(np.percentile(ratio, 90))],
            "abs_log_ratio_median": float(np.median(np.abs(np.log(ratio)))),
            "failed_only_here": int((~np.isfinite(lat) & np.isfinite(stored)).sum()),
            "failed_only_stored": int((np.isfinite(lat) & ~np.isfinite(stored)).sum())}
    return {"candidates": int(len(data)), "tasks": int(np.unique(data.group).size),
            "table": table, "vs_stored": agreement}


def print_report(report: dict) -> None:
    table = report["table"]
    labels = list(next(iter(table.values())))
    print(f"\nnetwork-level top-1 (top-5) over {report['candidates']} candidates of "
          f"{report['tasks']} tasks, mean over {', '.join(report['networks'])}; rows rank, "
          "columns are the latencies charged:")
    print(f"{'ranked by':18s}" + "".join(f"{lbl:>22s}" for lbl in labels))
    for ranker, row in table.items():
        print(f"{ranker:18s}" + "".join(
            f"{row[lbl]['mean_network_top1']:>15.3f} ({row[lbl]['mean_network_top5']:.3f})"
            for lbl in labels))
    for ranker, row in table.items():
        per_net = ", ".join(f"{net} {v['top1']:.3f}"
                            for net, v in row["stored"]["networks"].items())
        print(f"  {ranker}, charged stored: {per_net}")
    for name, a in report["vs_stored"].items():
        print(f"{name} / stored latency of a candidate: median {a['ratio_median']:.3f} (p10-p90 "
              f"{a['ratio_p10_p90'][0]:.2f}-{a['ratio_p10_p90'][1]:.2f}), median |log ratio| "
              f"{a['abs_log_ratio_median']:.3f}; failed only here {a['failed_only_here']}, "
              f"only stored {a['failed_only_stored']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="store holding the stored measurements")
    parser.add_argument("--hardware", default="local-1t",
                        help="the profile to re-measure: one this machine can run")
    parser.add_argument("--networks", default="resnet50@224,mobilenet_v2@224,bert@128",
                        help="network labels (NAME or NAME@SIZE)")
    parser.add_argument("--per-task", type=int, default=0, help="at most this many a task (0: all)")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--model", help="also rank with this model (a registered id or "
                                        "`shipped`), charged each label")
    parser.add_argument("--results", default="data/label-noise.jsonl",
                        help="fresh latencies, one JSON line per candidate (resumes)")
    parser.add_argument("--also", default="",
                        help="earlier rounds' --results files (comma-separated): each is a "
                             "label and a ranker of its own")
    parser.add_argument("--score-only", action="store_true", help="measure nothing more")
    parser.add_argument("--json", help="also write the report here")
    args = parser.parse_args()

    from tasks.hardware import check_runnable_here, resolve_profile

    profile = resolve_profile(args.hardware)
    networks = tuple(n for n in args.networks.split(",") if n)
    model, extractor = None, "per_store_feature_v1"
    if args.model:
        from models.registry import load_model
        from tasks.model_evaluation import resolve_model

        ref = resolve_model(args.model, args.db, profile.name)
        model, extractor = load_model(ref.path), ref.extractor
    data, sources = load_rows(args.db, profile.name, networks, args.per_task, extractor,
                              traces=bool(model is not None and model.takes_traces))
    print(f"{profile.name}: {len(data)} stored candidates over {np.unique(data.group).size} "
          f"tasks of {args.networks}" + (f" (at most {args.per_task} a task)"
                                         if args.per_task else ""), flush=True)
    results = Path(args.results)
    results.parent.mkdir(parents=True, exist_ok=True)
    if not args.score_only:
        check_runnable_here(profile)
        measure_missing(profile, data.candidate_id, sources, results, args.batch)
    rounds = {Path(f).stem: read_results(Path(f))
              for f in [*filter(None, args.also.split(",")), str(results)]}
    for name, fresh in rounds.items():
        if not any(int(c) in fresh for c in data.candidate_id):
            raise TenforgeError(f"round {name} holds no re-measurement of these candidates; "
                                "measure them first (without --score-only)")
    report = {"hardware": profile.name, "networks": networks, "db": args.db,
              "model": args.model, **noise_report(data, rounds, networks, model)}
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
