"""How well do cost models rank a search's own candidates, the ones it measures later?

A tuning search (MetaSchedule's evolutionary search, ranked by a cost model) spends its
second half among programs near each task's optimum. The leaderboards (docs/cost-models.md)
score models on random samples; this bench scores them on a search's pool instead: the
candidates a search measured (`tuning` rows in the store, written back by retunes and by
`bench/tuning_matrix.py --write-back`), replayed in the order they were measured. For each
search and each N it splits the search's measurements into the first N (what the search had
measured by then) and the rest (what it measured afterwards), and scores on the rest:

- `pretrained`: the model as loaded (`--model`: a registered id, an artifact folder, or
  `shipped`), never shown the search's measurements;
- `fine-tuned`: that model fine-tuned on the first N (strategy `full`, as the learned search
  refits itself: models/ms_adapter.py);
- `ms-xgb`: MetaSchedule's XGB trained from scratch on the first N (as MetaSchedule's search
  refits its own).

Scores per search and N: TenSet's network-level top-1 and top-5 over the network's tasks
(weighted by occurrences) and per-task pairwise accuracy, then the median over searches.

    .venv/bin/python bench/search_pool.py --db STORE --hardware cpu-znver4-avx512-1t \
        --network mobilenet_v2+nchw16c --model shipped --after 100,300,600
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from core.errors import TenforgeError  # noqa: E402

RANKERS = ("pretrained", "fine-tuned", "ms-xgb")


def pool_scores(data, scores: np.ndarray, network: str) -> dict[str, float]:
    """`scores` (higher = predicted faster) scored as `tenforge models evaluate` scores a
    model (models/evaluate.py): `network`'s network-level top-1 and top-5, and the per-task
    pairwise accuracy."""
    from models.evaluate import RANKING_METRICS, network_topk

    top = network_topk(data, scores, (network,))
    return {"top1": top["mean_network_top1"], "top5": top["mean_network_top5"],
            "pairwise": RANKING_METRICS["pairwise"](data.label, scores, data.group)}


def replay(data, order: np.ndarray, after: int,
           rankers: dict[str, Callable[[Any, Any], np.ndarray]], network: str) -> dict[str, Any]:
    """Every ranker (train, test) -> scores of test, where `order` is one search's rows in
    measuring order: trained on its first `after`, scored on the rest."""
    train, test = data.subset(order[:after]), data.subset(order[after:])
    out: dict[str, Any] = {"after": after, "scored": len(test)}
    for name, rank in rankers.items():
        out[name] = pool_scores(test, np.asarray(rank(train, test), np.float64), network)
    return out


def parse_after(text: str) -> list[int]:
    """--after's comma-separated counts, each a positive integer."""
    from tasks.validation import check_positive_ints

    try:
        counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise TenforgeError(f"--after must be comma-separated positive integers (100,300), "
                            f"got {text!r}") from None
    for n in counts:
        check_positive_ints(after=n)
    return counts


def searches(db: str, data) -> dict[str, np.ndarray]:
    """Search label -> its rows of `data` in measuring order. A search is the run that wrote
    the rows back: a tuning-matrix cell names its variant and seed, a retune its run id."""
    from storage.store import Store

    with Store(db, read_only=True) as store:
        rows = store.query(
            "SELECT m.candidate_id, m.measurement_id, r.run_id, r.parameters_json "
            "FROM measurements m JOIN runs r ON r.run_id = m.flow_run_id "
            "WHERE m.candidate_id IN (SELECT unnest(?))", [data.candidate_id.tolist()])
    where = {int(c): i for i, c in enumerate(data.candidate_id)}
    found: dict[str, list[tuple[int, int]]] = {}
    for candidate, measured, run_id, params_json in rows:
        params = json.loads(params_json or "{}")
        label = (f"{params['variant']}-s{params.get('seed', 0)}" if "variant" in params
                 else f"retune-{run_id[:8]}")
        found.setdefault(label, []).append((measured, where[int(candidate)]))
    return {label: np.array([i for _, i in sorted(pairs)], np.int64)
            for label, pairs in sorted(found.items())}


def make_rankers(model_path: Path) -> dict[str, Callable[[Any, Any], np.ndarray]]:
    from models.registry import create_model, load_model
    from models.transfer import fine_tune

    base = load_model(model_path)

    def fine_tuned(train, test):
        model, _ = fine_tune(model_path, "full" if "full" in base.STRATEGIES else "residual",
                             train)
        return model.predict(test)

    def ms_xgb(train, test):
        model = create_model("metaschedule_xgb")
        model.fit(train)
        return model.predict(test)

    return {"pretrained": lambda train, test: base.predict(test), "fine-tuned": fine_tuned,
            "ms-xgb": ms_xgb}


def medians(results: list[dict[str, Any]], after: int) -> dict[str, dict[str, float]]:
    rows = [r for r in results if r["after"] == after]
    return {name: {metric: float(np.median([r[name][metric] for r in rows]))
                   for metric in ("top1", "top5", "pairwise")} for name in RANKERS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--hardware", required=True, help="the profile the searches ran on")
    parser.add_argument("--network", required=True,
                        help="the network the searches tuned, with its graph "
                             "(mobilenet_v2+nchw16c)")
    parser.add_argument("--model", default="shipped",
                        help="a registered model id, an artifact folder, or shipped")
    parser.add_argument("--after", default="100,300,600",
                        help="comma-separated N: score on what each search measured after "
                             "its first N")
    parser.add_argument("--json", metavar="FILE", help="also write every result here")
    args = parser.parse_args(argv)
    from models.dataset import DataSpec, load_dataset
    from tasks.model_evaluation import resolve_model

    try:
        after = parse_after(args.after)
        ref = resolve_model(args.model, args.db, args.hardware)
        # trace summaries loaded for every model: one that does not take them ignores them
        data = load_dataset(args.db, DataSpec(hardware=(args.hardware,),
                                              networks=(args.network,), sources=("tuning",),
                                              extractor=ref.extractor, traces=True))
        pools = searches(args.db, data)
        if not pools:
            raise TenforgeError(f"no search wrote {args.network} back on {args.hardware} in "
                                f"{args.db}; run bench/tuning_matrix.py --write-back first")
    except TenforgeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    rankers = make_rankers(ref.path)
    print(f"{ref.model_id} on the searches of {args.network} on {args.hardware} ({len(data)} "
          f"measured candidates, {len(pools)} searches): network top-1 / top-5 / pairwise of "
          "what each search measured after its first N", flush=True)
    results = []
    for label, order in pools.items():
        for n in after:
            if n >= len(order):
                continue
            result = {"search": label, **replay(data, order, n, rankers, args.network)}
            results.append(result)
            print(f"{label:44s} N={n:4d} ({result['scored']:4d} scored)  " + "  ".join(
                f"{name} {result[name]['top1']:.3f}/{result[name]['top5']:.3f}/"
                f"{result[name]['pairwise']:.3f}" for name in RANKERS), flush=True)
    print("\nmedian over searches (network top-1 / top-5 / pairwise):")
    print("| N | " + " | ".join(RANKERS) + " |\n|---|" + "---|" * len(RANKERS))
    summary = {}
    for n in after:
        if not any(r["after"] == n for r in results):
            continue
        summary[n] = medians(results, n)
        print(f"| {n} | " + " | ".join(
            f"{summary[n][name]['top1']:.3f} / {summary[n][name]['top5']:.3f} / "
            f"{summary[n][name]['pairwise']:.3f}" for name in RANKERS) + " |")
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"model": ref.model_id, "db": args.db, "hardware": args.hardware,
             "network": args.network, "results": results,
             "medians": {str(k): v for k, v in summary.items()}}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
