"""Tuning networks with learned cost models vs MetaSchedule's own, at the same trial budget.

For each network, on one hardware profile, in one run, MetaSchedule tunes the tasks carrying
90% of the FLOPs (same task scheduler, population and seed) driven by
  (a) MetaSchedule's XGBModel, trained from scratch while tuning (the baseline),
  (b) tenforge's pre-trained model: trained on the source profile's seed measurements,
  (c) that model transferred: fine-tuned ("full") on --samples measurements of the target.
The benchmarked networks' tasks are left out of (b)'s and (c)'s training data, so the models
have never seen the workloads they tune. Then each tuned network is compiled with its tuning
database and timed end to end (median of 20 warm runs, the profile's threads), next to the
untuned build and PyTorch eager on the same input and thread count.

Reported per network and cost model: final end-to-end latency, the tuned tasks' estimated
latency (sum of occurrences x best cold-cache task latency, the curve MetaSchedule optimizes),
search time, and the search-time speedup = time the baseline (the first variant, (a) by
default) took to reach its best estimated latency within the trial budget / time the variant
took to reach that same latency ("never" when it did not); the same ratio in trials (robust to
a noisy machine). `--variants` adds ablations: the resource-constraint rules (+rules) and
tenforge's schedulers (+gain, +dual). Curves -> PNG and JSON.

    .venv/bin/python bench/tuning.py [--networks tiny_cnn,resnet18] [--trials 256]
        [--variants a,b,c] [--hardware local-1t] [--source PROFILE]
        [--out bench/out]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.registry import create_model  # noqa: E402
from models.splits import sample_by_task  # noqa: E402
from models.transfer import fine_tune  # noqa: E402
from storage.reports import format_table  # noqa: E402
from storage.seed import load_shards  # noqa: E402
from storage.store import Store  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.networks import build_network  # noqa: E402
from tasks.tuning import TuningResult, tune_network  # noqa: E402


def train_models(db: str, source: str, target: str, exclude: list[str], family: str,
                 samples: int, seed: int, work: Path) -> dict[str, str]:
    """(b) pre-trained on `source`, (c) fine-tuned to `target`; neither sees `exclude`."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        stored = [n for (n,) in store.query("SELECT DISTINCT name FROM networks ORDER BY 1")]
    others = tuple(n for n in stored if n not in exclude)
    source_data = load_dataset(db, DataSpec(hardware=(source,), networks=others))
    model = create_model(family, seed=seed)
    model.fit(source_data)
    model.save(work / "pretrained")
    target_data = load_dataset(db, DataSpec(hardware=(target,), networks=others))
    # whole tasks at a time, as the transfer flow does (ranking pairs live inside a task)
    chosen = target_data.subset(sample_by_task(target_data, np.arange(len(target_data)),
                                               samples, seed))
    transferred, _ = fine_tune(work / "pretrained", "full", chosen, seed=seed)
    transferred.save(work / "transferred")
    print(f"pre-trained {family} on {source_data.describe()} of {source}; fine-tuned on "
          f"{len(chosen)} samples of {target} (networks {', '.join(others)})", flush=True)
    return {"(b) pre-trained": str(work / "pretrained"),
            "(c) transferred": str(work / "transferred")}


def torch_eager_ms(network: str, threads: int, runs: int = 20) -> float:
    model, inputs = build_network(network, 1)
    return eager_ms(model, inputs, threads, runs)


def torch_eager_ms_fresh(network: str, threads: int, runs: int = 20) -> float:
    """torch_eager_ms in a new Python process (same CPU affinity): a process that sampled and
    ranked candidates first (instant tuning) timed PyTorch's resnet18 at 94 ms, a fresh one
    at 64-69 ms on the same quiet core."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from bench.tuning import "
            "torch_eager_ms; print(torch_eager_ms(sys.argv[2], int(sys.argv[3]), "
            "int(sys.argv[4])))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT), network, str(threads),
                          str(runs)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def eager_ms(model, inputs, threads: int, runs: int = 20) -> float:
    """PyTorch eager at `threads`: median of `runs` calls after 3 warm-up calls, in ms."""
    import torch

    torch.set_num_threads(threads)
    with torch.no_grad():
        for _ in range(3):
            model(*inputs)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(*inputs)
            times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e3


def curve(result: TuningResult) -> tuple[list[int], list[float], list[float]]:
    points = [p for p in result.curve if p.estimated_s is not None]
    return ([p.trials for p in points], [p.wall_s for p in points],
            [p.estimated_s * 1e3 for p in points])


def reach(result: TuningResult, latency_ms: float) -> tuple[int, float] | None:
    """(trials, wall seconds) at which `result`'s estimate first got to `latency_ms`."""
    for trials, wall, est in zip(*curve(result)):
        if est <= latency_ms * (1 + 1e-9):
            return trials, wall
    return None


def at_budget(result: TuningResult, trials: int) -> float:
    """Best estimated latency (ms) within the first `trials` trials."""
    return min(est for t, _, est in zip(*curve(result)) if t <= trials)


def parse_variant(text: str, scheduler: str) -> tuple[str, str, bool]:
    """'c+rules+dual' -> ('c', 'dual', True): cost model a|b|c, + rules, + a scheduler."""
    model, *extras = text.split("+")
    if model not in ("a", "b", "c") or not set(extras) <= {"rules", "gain", "dual", "gradient"}:
        raise SystemExit(f"bad variant {text!r}: a|b|c, then any of +rules +gain +dual")
    chosen = [e for e in extras if e != "rules"]
    return model, chosen[-1] if chosen else scheduler, "rules" in extras


def plot(results: dict[str, dict[str, TuningResult]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(results), 2, figsize=(11, 3.6 * len(results)), squeeze=False)
    for row, (network, by_model) in enumerate(results.items()):
        for label, result in by_model.items():
            trials, wall, est = curve(result)
            axes[row][0].step(trials, est, where="post", label=label)
            axes[row][1].step(wall, est, where="post", label=label)
        for col, xlabel in enumerate(("trials", "search wall time (s)")):
            axes[row][col].set_xlabel(xlabel)
            axes[row][col].set_ylabel("estimated latency (ms)")
            axes[row][col].set_title(f"{network}: best so far vs {xlabel.split(' (')[0]}")
            axes[row][col].grid(alpha=0.3)
        axes[row][0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default="tiny_cnn,resnet18")
    parser.add_argument("--hardware", default="local-1t",
                        help="the target profile (default: this machine, one thread)")
    parser.add_argument("--source", default=None,
                        help="profile whose seed data pre-trains (b) (default: the store's "
                             "profile with most measurements other than the target)")
    parser.add_argument("--trials", type=int, default=256)
    parser.add_argument("--population", type=int, default=64)
    parser.add_argument("--scheduler", default="gradient", help="task scheduler by default")
    parser.add_argument("--variants", default="a,b,c",
                        help="what to tune with, the first is the baseline: a (MetaSchedule "
                             "xgb), b (pre-trained), c (transferred), each optionally +rules "
                             "(resource-constraint rules) and +gain or +dual (scheduler)")
    parser.add_argument("--family", default="xgb")
    parser.add_argument("--samples", type=int, default=200, help="target samples for (c)")
    parser.add_argument("--db", help="store (default: the seed, loaded into a temp store)")
    parser.add_argument("--out", default="bench/out", help="folder for the PNG")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    networks = [n for n in args.networks.split(",") if n]
    profile = resolve_profile(args.hardware)
    work = scratch_dir("tuning")
    db = args.db or str(work / "seed.duckdb")
    if args.db is None:
        load_shards(db, progress=lambda _: None)
    if args.source is None:
        from tasks.training import default_hardware

        with Store(db, read_only=True) as store:
            counts = dict(store.query("SELECT hardware, count(*) FROM v_candidate_measurements "
                                      "GROUP BY 1"))
        others = [h for h in default_hardware(db) if h != profile.name]
        args.source = max(others, key=lambda h: counts.get(h, 0))
    models = {"a": ("(a) MetaSchedule xgb", "xgb")}
    trained = train_models(db, args.source, profile.name, networks, args.family, args.samples,
                           args.seed, work)
    models.update({"b": ("(b) pre-trained", trained["(b) pre-trained"]),
                   "c": ("(c) transferred", trained["(c) transferred"])})
    variants = [parse_variant(v, args.scheduler) for v in args.variants.split(",") if v]
    results: dict[str, dict[str, TuningResult]] = {}
    rows = []
    for network in networks:
        eager = torch_eager_ms(network, profile.num_threads)
        for index, (model_key, scheduler, rules) in enumerate(variants):
            label = models[model_key][0] + (f" +{scheduler}" if scheduler != args.scheduler
                                            else "") + (" +rules" if rules else "")
            print(f"== {network} with {label}", flush=True)
            results.setdefault(network, {})[label] = tune_network(
                network, profile, work / network / str(index), args.trials,
                cost_model=models[model_key][1], scheduler=scheduler,
                population=args.population, seed=args.seed, constraints=rules,
                report=lambda line: print("   ", line, flush=True))
        # the baseline is the first variant; "final" = its best within the trial budget (it
        # may measure a batch more than asked)
        baseline = next(iter(results[network].values()))
        base_final = at_budget(baseline, args.trials)
        base_trials, base_time = reach(baseline, base_final)
        for label, result in results[network].items():
            got = reach(result, base_final)
            rows.append((network, label, result.trials, round(result.tuned["latency_s"] * 1e3, 4),
                         round(result.untuned["latency_s"] * 1e3, 4), round(eager, 4),
                         round(at_budget(result, args.trials), 4), round(result.search_s, 1),
                         result.rejected_by_rules,
                         "never" if got is None else f"{got[0]} / {got[1]:.0f} s",
                         "-" if got is None else round(base_time / max(got[1], 1e-9), 2),
                         "-" if got is None else round(base_trials / got[0], 2)))
    print(f"\nTuning on {profile.name} ({profile.num_threads} thread(s)), {args.trials} trials, "
          f"population {args.population}, {args.scheduler} scheduler unless named, no "
          "constraint rules unless named, tasks with 90% of FLOPs:")
    print(format_table(["network", "cost model", "trials", "tuned ms", "untuned ms",
                        "torch ms", f"est. ms @{args.trials}", "search s", "dropped by rules",
                        "to baseline's final (trials / s)", "search-time speedup",
                        "trial speedup"], rows))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    png = out / "tuning_curves.png"
    plot(results, png)
    curves = {net: {label: [asdict(p) for p in r.curve] for label, r in by.items()}
              for net, by in results.items()}
    (out / "tuning_curves.json").write_text(json.dumps(curves))
    print(f"\ncurves: {png}  (tuning databases under {work})")


if __name__ == "__main__":
    main()
