"""The by_network leaderboard: every cost-model family, feature set and data kind on networks
none of them saw, beside MetaSchedule's own XGBModel trained on the same rows.

Data: the store given by --db, or (default) a fresh store loaded from the shipped seed dataset.
Split: by_network (the --holdout networks and every task they share are the test part;
validation is whole networks too, so early stopping and the search reward ranking unseen
networks), one split per --seeds entry. Rows of the table, for each data kind:

- data kind: `random` trains on collect's random samples of the training tasks;
  `random + search` adds what retunes measured near those tasks' optima (candidate source
  'tuning', tasks/tuning/writeback.py), when the store has any. Both validate and are scored on
  the same random rows of the validation and held-out networks (models.splits.rows_in_tasks_of).
- family x feature set: per-store features (MetaSchedule's PerStoreFeature), and for the tree
  families per-store + the trace summary, and + its tile block too (models/trace_features.py),
  and + the asm columns too where the store holds them (`tenforge dataset asm`;
  models/asm_features.py: what the compiled code does; NaN for a row without them);
  `bagged` is five lgbm models of different seeds ranking together (models/bagged.py), not
  searched;
- hparams: the family's defaults, and (--trials > 0) the best of an Optuna study restricted to
  the family (its feature set is searched too), validated on the validation networks.

Scores (models.evaluate.network_report): TenSet's network-level top-1 and top-5 (mean over the
held-out networks), per-task peak@1 and pairwise accuracy, and top-1 over MetaSchedule's XGB on
the same data; median over seeds with the spread (min-max) when there are several.

    .venv/bin/python bench/leaderboard.py [--seeds 0] [--trials 6] [--families xgb,lgbm,...]
        [--holdout resnet50,mobilenet_v2,bert] [--db STORE] [--hardware H1,H2] [--json OUT]
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
    ASM_FEATURE_SETS,
    FEATURE_SETS,
    feature_set_name,
    held_out_parts,
    latency_option,
    profiles,
    scratch_dir,
    spread,
    store_or_seed,
)
from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from core.errors import TenforgeError  # noqa: E402
from models.dataset import DataSpec, load_dataset, with_stored_asm  # noqa: E402
from models.evaluate import network_report  # noqa: E402
from models.registry import FAMILIES, create_model  # noqa: E402
from models.search import TRACE_FAMILIES, SearchSpec, run_search  # noqa: E402
from models.splits import rows_in_tasks_of  # noqa: E402
from storage.reports import format_table  # noqa: E402

BASELINE = "metaschedule_xgb"
BAG = "bagged"  # five lgbm seeds (models/bagged.py): its feature sets are its members'
KEYS = ("mean_network_top1", "mean_network_top5", "peak1", "pairwise")


def load_kinds(db: str, hardware: tuple[str, ...], latency: str = "mean") -> dict[str, object]:
    """The datasets to compare: random samples, and every source when retunes added some;
    with the asm columns where the store holds any; labelled by `latency` of the repeats."""
    random = load_dataset(db, DataSpec(hardware=hardware, traces=True, sources=("sampled",),
                                       latency=latency))
    stored = with_stored_asm(db, random)
    asm = not np.isnan(stored.asm).all()  # none stored: `tenforge dataset asm` adds them
    if asm:
        random = stored
        print(f"asm columns: {np.mean(~np.isnan(random.asm).all(1)):.1%} of the random rows")
    kinds = {"random": random}
    try:
        searched = load_dataset(db, DataSpec(hardware=hardware, traces=True,
                                             sources=("tuning",), latency=latency))
    except TenforgeError:  # no retune wrote measurements of these profiles back yet
        return kinds
    both = load_dataset(db, DataSpec(hardware=hardware, traces=True, latency=latency))
    kinds["random + search"] = with_stored_asm(db, both) if asm else both
    print(f"search-biased rows (retunes): {len(searched)} over "
          f"{np.unique(searched.group).size} tasks of {', '.join(searched.network_families())}")
    return kinds


def variants(families: list[str], trials: int, asm: bool = False) -> list[tuple[str, str, str]]:
    """(family, feature set, hparams): defaults per feature set (the asm set too for the
    tree families, with `asm`), then one searched row."""
    out = []
    for family in families:
        out.append((family, "per-store", "default"))
        if family in TRACE_FAMILIES or family == BAG:
            out.append((family, "per-store + trace", "default"))
            out.append((family, "per-store + trace + tiles", "default"))
        if asm and family in TRACE_FAMILIES:
            out.extend((family, name, "default") for name in ASM_FEATURE_SETS)
        if trials > 0 and family != BAG:
            out.append((family, "searched", "searched"))
    out.append((BASELINE, "per-store", "default"))
    return out


def fit(family: str, features: str, hparams: str, train, valid, args, seed: int, work: Path,
        study: str) -> tuple[object, str]:
    """The fitted model of one leaderboard row, and the feature set it ended up with."""
    params: dict = dict({**FEATURE_SETS, **ASM_FEATURE_SETS}[features])
    if family == BAG:
        params = {"member_params": params}
    if hparams == "searched":
        spec = SearchSpec(families=(family,), trials=args.trials, time_budget_s=args.budget,
                          seed=seed, max_epochs=args.max_epochs)
        params = run_search(train, valid, spec, study, work / "studies.journal",
                            log=lambda _: None).best_params
        features = feature_set_name(params)
    model = create_model(family, seed=seed, **params)
    model.fit(train, valid)
    return model, features


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="store to read (default: the seed, loaded into a temp store)")
    parser.add_argument("--hardware", help="comma-separated profiles (default: all in the store)")
    parser.add_argument("--holdout", default="resnet50,mobilenet_v2,bert",
                        help="networks held out of training (every size of each)")
    parser.add_argument("--seeds", default="0", help="comma-separated split and model seeds")
    parser.add_argument("--trials", type=int, default=6,
                        help="Optuna trials per family (0: defaults only)")
    parser.add_argument("--budget", type=float, default=600, help="seconds per family study")
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--json", help="also write every run's numbers here")
    latency_option(parser)
    args = parser.parse_args()

    work = scratch_dir("leaderboard")
    db = store_or_seed(args.db, "leaderboard")
    hardware = profiles(db, args.hardware)
    holdout = tuple(args.holdout.split(","))
    kinds = load_kinds(db, hardware, args.latency)
    random = kinds["random"]
    print(f"data: {random.describe()}; held out: {', '.join(holdout)}", flush=True)
    runs: dict[tuple, list[dict]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        print()
        train, valid, test = held_out_parts(random, seed, holdout)
        for kind, data in kinds.items():
            kind_train = data.subset(rows_in_tasks_of(data, train))
            print(f" {kind}: {len(kind_train)} training rows", flush=True)
            for family, features, hparams in variants(args.families.split(","), args.trials,
                                                      random.asm is not None):
                start = time.perf_counter()
                model, picked = fit(family, features, hparams, kind_train, valid, args, seed,
                                    work, f"{kind}-{family}-{seed}")
                report = network_report(model, test, holdout)
                runs.setdefault((kind, family, features, hparams), []).append(
                    {"seed": seed, "features": picked, "seconds": time.perf_counter() - start,
                     **{k: report[k] for k in KEYS}, "networks": report["networks"]})
                print(f"  {family} {picked} {hparams}: mean network top-1 "
                      f"{report['mean_network_top1']:.3f}, top-5 "
                      f"{report['mean_network_top5']:.3f} "
                      f"({time.perf_counter() - start:.0f} s)", flush=True)
    print_table(runs, args.seeds)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"data": random.describe(), "holdout": holdout, "seeds": args.seeds,
             "latency": args.latency,
             "runs": [{"kind": k, "family": f, "features": fs, "hparams": hp, "results": r}
                      for (k, f, fs, hp), r in runs.items()]}, indent=1, default=str))


def print_table(runs: dict[tuple, list[dict]], seeds: str) -> None:
    nets = list(next(iter(runs.values()))[0]["networks"])
    rows = []
    for (kind, family, features, hparams), results in runs.items():
        base = runs[(kind, BASELINE, "per-store", "default")]
        gain = [r["mean_network_top1"] - b["mean_network_top1"] for r, b in zip(results, base)]
        if hparams == "searched":  # the feature set the search picked, per seed
            features = "/".join(sorted({r["features"] for r in results}))
        rows.append((kind, family, features, hparams,
                     *(spread([r[k] for r in results], 3) for k in KEYS),
                     "—" if family == BASELINE else f"{np.median(gain):+.3f}",
                     *(f"{np.median([r['networks'][n]['top1'] for r in results]):.3f}"
                       for n in nets)))
    print(f"\nheld-out networks, seeds {seeds} (median, min-max):")
    print(format_table(["data", "family", "features", "hparams", "net top-1", "net top-5",
                        "peak@1", "pairwise", "top-1 vs MS XGB", *(f"{n} top-1" for n in nets)],
                       rows))


if __name__ == "__main__":
    main()
