"""How well a cost model ranks a CPU it never saw: leave one CPU out, per CPU.

What a fleet needs: a model trained on the CPUs it had, ranking the candidates of a machine it
lands on before measuring anything there. Data: the store's x86 one-thread CPU profiles (the
seed by default), random and search-biased rows. One by_network split per --seeds entry (the
--holdout networks and every task they share are the test part, validation is whole networks,
as bench/leaderboard.py). Then for each CPU P, scored on P's rows of the held-out networks
(models.evaluate.network_report: TenSet's network-level top-1 and top-5, mean over networks):

- `unseen`: lgbm + trace summary trained and validated on every profile but P (zero-shot);
- `seen`: the same, trained and validated with P's rows of the training networks too;
- `MS XGB, P only`: MetaSchedule's XGB trained on P's training rows alone, what a search on
  P learns from P's own data (empty where P has none);
- `random`: the mean of 20 random rankings of the same rows (the floor).

Median over seeds (min-max). It trains 2 models per CPU and seed plus one baseline; on the
126-shard seed that is about a minute per CPU and seed on one vCPU. --cpus scores only the named
CPUs (a machine new to the store, say); every CPU's rows still train the other arms.

    .venv/bin/python bench/unseen_cpu.py [--db STORE] [--seeds 0,1,2] [--cpus P1,P2]
        [--holdout resnet50,mobilenet_v2,bert] [--family lgbm] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._data import (  # noqa: E402
    held_out_bench_options,
    held_out_parts,
    one_thread_cpus,
    spread,
    store_or_seed,
)
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from core.errors import TenforgeError  # noqa: E402
from models.dataset import DataSpec, load_dataset  # noqa: E402
from models.evaluate import network_report  # noqa: E402
from models.registry import create_model  # noqa: E402
from storage.reports import format_table  # noqa: E402

ARMS = ("unseen", "seen", "MS XGB, P only", "random")
RANDOM_DRAWS = 20


def on_hardware(data, names: set[str], keep: bool = True):
    """`data`'s rows measured on `names` (keep) or on any other profile (not keep)."""
    hw = np.array([n in names for n in data.hardware_names])[data.candidate_hardware()]
    return data.subset(np.flatnonzero(hw if keep else ~hw))


class RandomRanking:
    """Scores drawn at random: the floor every ranking is compared with."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def predict(self, data) -> np.ndarray:
        return self.rng.random(len(data))


def score(model, test, holdout) -> dict[str, float]:
    report = network_report(model, test, holdout)
    return {"top1": report["mean_network_top1"], "top5": report["mean_network_top5"]}


def random_floor(test, networks) -> dict[str, float]:
    """The mean score of RANDOM_DRAWS random rankings of `test`'s rows of `networks`."""
    draws = [score(RandomRanking(d), test, networks) for d in range(RANDOM_DRAWS)]
    return {k: float(np.mean([d[k] for d in draws])) for k in ("top1", "top5")}


def fitted(family: str, params: dict, train, valid, seed: int):
    model = create_model(family, seed=seed, **params)
    model.fit(train, valid)
    return model


def one_cpu(cpu: str, train, valid, test, holdout, family: str, seed: int,
            params: dict | None = None) -> dict[str, dict]:
    """Every arm's scores on `cpu`'s held-out rows (an arm without data is left out);
    `params` of the family (default: with the trace summary)."""
    mine = {cpu}
    test_p = on_hardware(test, mine)
    params = {"trace_features": True} if params is None else params
    out = {"unseen": score(fitted(family, params, on_hardware(train, mine, keep=False),
                                  on_hardware(valid, mine, keep=False), seed), test_p, holdout),
           "seen": score(fitted(family, params, train, valid, seed), test_p, holdout)}
    own_train, own_valid = on_hardware(train, mine), on_hardware(valid, mine)
    if len(own_train) and len(own_valid):
        out["MS XGB, P only"] = score(fitted("metaschedule_xgb", {}, own_train, own_valid, seed),
                                      test_p, holdout)
    out["random"] = random_floor(test_p, holdout)
    return out


def scored_cpus(requested: str | None, present: list[str]) -> tuple[str, ...]:
    """The CPUs to leave out one at a time: the comma-separated `requested`, each of which
    must be in `present` (the store's one-thread CPUs), or all of `present`."""
    if not requested:
        return tuple(present)
    names = tuple(requested.split(","))
    unknown = [n for n in names if n not in present]
    if unknown:
        raise SystemExit(f"--cpus {','.join(unknown)}: not a one-thread CPU profile with data in "
                         f"the store; it has {', '.join(present) or 'none'}")
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    held_out_bench_options(parser, "resnet50,mobilenet_v2,bert",
                           "networks held out of training (every size of each)")
    parser.add_argument("--cpus", metavar="P1,P2",
                        help="score only these CPUs (default: every one-thread CPU of the store)")
    args = parser.parse_args()

    db = store_or_seed(args.db, "unseen-cpu")
    present = one_thread_cpus(db)
    if len(present) < 2:
        raise SystemExit(f"{db} has {len(present)} one-thread CPU profile(s) with data; leaving "
                         "one out needs at least 2")
    scored = scored_cpus(args.cpus, present)
    holdout = tuple(args.holdout.split(","))
    # every CPU's rows load: the arms train on the others even when one CPU is scored
    data = load_dataset(db, DataSpec(hardware=tuple(present), traces=True))
    print(f"data: {data.describe()}; held out: {', '.join(holdout)}", flush=True)
    results: dict[str, dict[str, list[dict]]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        train, valid, test = held_out_parts(data, seed, holdout)
        for cpu in scored:
            start = time.perf_counter()
            try:
                arms = one_cpu(cpu, train, valid, test, holdout, args.family, seed)
            except TenforgeError as exc:  # P measured none of the held-out networks' tasks
                print(f" {cpu}: skipped ({exc})", flush=True)
                continue
            for arm, values in arms.items():
                results.setdefault(cpu, {}).setdefault(arm, []).append(values)
            print(f" seed {seed} {cpu}: " + ", ".join(
                f"{arm} {v['top1']:.3f}" for arm, v in arms.items())
                + f" ({time.perf_counter() - start:.0f} s)", flush=True)
    rows = []
    for cpu, arms in results.items():
        for arm in ARMS:
            if arm in arms:
                rows.append([cpu, arm, spread([r["top1"] for r in arms[arm]], 3),
                             spread([r["top5"] for r in arms[arm]], 3)])
    print(f"\nMean network top-1 / top-5 on each CPU's rows of {', '.join(holdout)}, "
          f"{args.family} + trace summary; seeds {args.seeds} (median, min-max):")
    print(format_table(["cpu", "model", "net top-1", "net top-5"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"data": data.describe(), "holdout": holdout, "seeds": args.seeds,
             "family": args.family, "results": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
