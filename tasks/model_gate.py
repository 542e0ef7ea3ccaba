"""A retrained model replaces the current ones only where it ranks unseen networks better.

The scheduled search retrains on whatever the store has gathered since the last run. A new
model is registered only if, on the held-out networks of its by_network split, its mean
network-level top-1 beats every rival that never trained on those networks: the registered
models whose own by_network split held them out, and the shipped model for this CPU. All are
scored now, on the same rows. A rival trained on them is no rival (its score there says
nothing about unseen networks), and neither is one that needs inputs this data lacks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from models.base import META_FILE
from models.dataset import Dataset, with_stored_asm


def rivals(db: str, holdout: tuple[str, ...]) -> dict[str, str]:
    """model id -> artifact path of every model that kept `holdout` out of its training."""
    from storage import queries
    from storage.store import Store
    from tasks.shipped import shipped_models

    out: dict[str, str] = {}
    with Store(db, read_only=True) as store:
        rows = queries.model_splits(store)
    candidates = [(mid, path, json.loads(split or "{}")) for mid, path, split in rows]
    candidates += [(m.model_id, str(m.path), m.lineage.get("split") or {})
                   for m in shipped_models()]
    for model_id, path, split in candidates:
        if split.get("kind") == "by_network" and set(holdout) <= set(split.get("holdout") or ())\
                and (Path(path) / META_FILE).is_file():
            out[model_id] = path
    return out


def with_traces(db: str, data: Dataset) -> Dataset:
    """`data` with each candidate's trace summary (models/trace_features.py) from the store."""
    from dataclasses import replace

    from models.trace_features import trace_matrix
    from storage import queries
    from storage.store import Store

    with Store(db, read_only=True) as store:
        traces = queries.candidate_traces(store, data.candidate_id.tolist())
    return replace(data, trace=trace_matrix([traces[int(c)] for c in data.candidate_id]))


def not_registered(verdict: dict[str, Any], holdout: tuple[str, ...]) -> str:
    """The line that says why a gated model was not registered."""
    rival = verdict["best_rival"]
    return (f"not registered: held-out networks ({', '.join(holdout)}) mean top-1 "
            f"{verdict['mean_network_top1']:.4f}, {rival} has {verdict['rivals'][rival]:.4f} "
            "on the same rows")


def gate(db: str, model: Any, test: Dataset, holdout: tuple[str, ...]) -> dict[str, Any]:
    """Whether `model` beats every rival on `test`'s held-out networks; the scores."""
    from models.evaluate import network_report
    from models.registry import load_model

    mine = network_report(model, test, holdout)["mean_network_top1"]
    theirs: dict[str, float] = {}
    for model_id, path in rivals(db, holdout).items():
        rival = load_model(path)
        if rival.takes_traces and test.trace is None:
            test = with_traces(db, test)  # the same rows, with what this rival reads too
        if rival.takes_asm and test.asm is None:
            test = with_stored_asm(db, test)
        theirs[model_id] = network_report(rival, test, holdout)["mean_network_top1"]
    best = max(theirs, key=theirs.get) if theirs else None
    return {"mean_network_top1": mine, "rivals": theirs, "best_rival": best,
            "wins": best is None or mine > theirs[best]}
