"""A retrained model replaces the current ones only where it ranks unseen networks better.

The scheduled search retrains on whatever the store has gathered since the last run. A new
model is registered only if its mean network-level top-1 beats every rival's on the networks
both held out of training: the registered models with a by_network split, and the model
shipped for the target (kind and CPU architecture) of the profiles whose rows train it. Each
is scored now, on the same rows as the new model. A network one of them trained on would
flatter it, so a rival is compared on the networks the two share as held out (a new model
that holds out more networks than the shipped one is still compared, on the shipped one's:
holding out more must not let it skip the gate, as tasks/shipped.py's `shipped_to_beat` rules
for bench/ship_model.py), and one that shares none is no rival. Nor is one whose artifact is
gone. The bar is one split and a strict win; bench/ship_model.py, which writes into the
repository, asks more (several seeds and a margin).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from models.base import META_FILE
from models.dataset import Dataset, with_stored_asm
from tasks.shipped import SHIPPED_DIR, both_held_out, shipped_for_target


@dataclass(frozen=True)
class Rival:
    path: str  # the model's artifact folder
    networks: tuple[str, ...]  # those it held out too, in the new model's order: compared on these


def rivals(db: str, holdout: tuple[str, ...], profiles: tuple[str, ...],
           shipped_folder: Path = SHIPPED_DIR) -> dict[str, Rival]:
    """model id -> the rival it is, for every registered model and the model shipped (in
    `shipped_folder`) for the target of `profiles` (those whose rows train the new model) that
    kept one or more of `holdout` out of its training (a by_network split) and whose artifact
    is still there."""
    from storage import queries
    from storage.store import Store

    with Store(db, read_only=True) as store:
        rows = queries.model_splits(store)
        targets = {queries.stored_target(store, p) for p in profiles} - {None}
    candidates = [(mid, path, json.loads(split or "{}")) for mid, path, split in rows]
    shipped = {m.model_id: m for m in (shipped_for_target(*t, shipped_folder)
                                       for t in sorted(targets)) if m}
    candidates += [(m.model_id, str(m.path), m.lineage.get("split") or {})
                   for m in shipped.values()]
    out: dict[str, Rival] = {}
    for model_id, path, split in candidates:
        shared = both_held_out(holdout, split)
        if shared and (Path(path) / META_FILE).is_file():
            out[model_id] = Rival(path, shared)
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
    score = verdict["rivals"][rival]
    return (f"not registered: on held-out networks {', '.join(score['networks'])} (of "
            f"{', '.join(holdout)}) mean top-1 {score['mine']:.4f}, {rival} has "
            f"{score['theirs']:.4f} on the same rows")


def gate(db: str, model: Any, test: Dataset, holdout: tuple[str, ...]) -> dict[str, Any]:
    """Whether `model` beats every rival on the networks both held out of `test`; the scores:
    its own mean over all of `holdout`, and per rival the networks compared on, its mean there
    and the rival's. `best_rival` is the one it beats by least (or loses to by most)."""
    from models.evaluate import network_report
    from models.registry import load_model

    mine = {holdout: network_report(model, test, holdout)["mean_network_top1"]}
    scores: dict[str, dict[str, Any]] = {}
    for model_id, rival in rivals(db, holdout, test.hardware_names).items():
        loaded = load_model(rival.path)
        if loaded.takes_traces and test.trace is None:
            test = with_traces(db, test)  # the same rows, with what this rival reads too
        if loaded.takes_asm and test.asm is None:
            test = with_stored_asm(db, test)
        if rival.networks not in mine:  # rivals sharing these networks share this score
            mine[rival.networks] = network_report(model, test, rival.networks)[
                "mean_network_top1"]
        scores[model_id] = {"networks": list(rival.networks), "mine": mine[rival.networks],
                            "theirs": network_report(loaded, test, rival.networks)
                            ["mean_network_top1"]}
    best = (max(scores, key=lambda m: scores[m]["theirs"] - scores[m]["mine"])
            if scores else None)
    return {"mean_network_top1": mine[holdout], "rivals": scores, "best_rival": best,
            "wins": all(s["mine"] > s["theirs"] for s in scores.values())}
