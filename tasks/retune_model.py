"""Which cost model a retune tunes with, and why: the one asked for, else the store's best
for the profile, else the model tenforge ships; each checked before any work (features it
reads, the kind of target it saw, an artifact that loads)."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from storage import queries
from storage.store import Store
from tasks.sampling import FEATURE_EXTRACTOR  # what the MetaSchedule adapter feeds a model
from tasks.shipped import SHIPPED, ShippedModel, require_shipped_for, shipped_for

BASELINE = "metaschedule-xgb"  # MetaSchedule's own XGBModel, trained from scratch while tuning


def best_model(store: Store, hardware: str) -> str | None:
    """The registered model to tune `hardware` with: the best top-1 measured on this profile's
    held-out tasks (`model_evaluations`, written by transfer and onboard), else the best held-out
    top-1 among models trained on this profile's data, else among all models (they take
    hardware features as inputs); None when nothing is registered."""
    return queries.best_model_id(store, hardware, FEATURE_EXTRACTOR)


def explain_choice(row: dict[str, Any], hardware: str, asked: bool,
                   top1_here: float | None = None) -> str:
    """Why this model tunes `hardware`, and a warning when it never saw that profile's data
    and was never measured on it."""
    spec = json.loads(row["data_spec_json"])
    trained_on = list(spec.get("hardware") or [])
    top1 = json.loads(row["metrics_json"] or "{}").get("peak1")
    why = ("as asked" if asked else
           f"the best top-1 measured on {hardware}'s held-out tasks ({top1_here:.3f})"
           if top1_here is not None else
           f"the best held-out top-1 ({top1:.3f})" if isinstance(top1, (int, float)) else
           "the newest registered model (no held-out score)")
    head = f"cost model {row['model_id']} ({row['kind']}): {why}"
    if hardware in trained_on:
        return f"{head}; trained on {hardware}'s data"
    if top1_here is not None:
        return f"{head}; trained on {', '.join(trained_on)}, measured here"
    return (f"{head}; WARNING: it has never seen {hardware}'s data (trained on "
            f"{', '.join(trained_on) or 'nothing recorded'}) and ranks from hardware features "
            f"alone; `tenforge onboard --hardware {hardware}` measures and adapts one here")


def _best_registered(db: str, hardware: str) -> str | None:
    """best_model of the store at `db` (None: no store, or no model in it)."""
    if not Path(db).exists():
        return None
    with Store(db, read_only=True) as store:
        return best_model(store, hardware)


def shipped_choice(shipped: ShippedModel, hardware: str, asked: bool) -> str:
    """Why the shipped model tunes `hardware`: asked for, or the store has no model yet."""
    lineage = shipped.lineage
    top1 = lineage.get("metrics", {}).get("mean_network_top1", float("nan"))
    held = ", ".join(lineage.get("split", {}).get("holdout") or ()) or "none"
    trained = list(lineage.get("data_spec", {}).get("hardware") or ())
    why = "as asked" if asked else "shipped with tenforge; this store has no model of its own"
    seen = ("trained on its data" if hardware in trained else
            "it never saw this profile's data and ranks from hardware features alone "
            f"(`tenforge onboard --hardware {hardware}` adapts it here)")
    return (f"cost model {shipped.model_id} ({shipped.kind}): {why}; trained on "
            f"{', '.join(trained)}, "
            f"held-out networks ({held}) mean top-1 {top1:.3f}; {seen}")


def check_model_fits(store: Store, row: dict[str, Any], profile: HardwareProfile) -> None:
    """Refuse a model that cannot score this profile's candidates: other features, or trained
    only on another kind of target (a GPU model for a CPU, say)."""
    spec = json.loads(row["data_spec_json"])
    if spec.get("extractor") != FEATURE_EXTRACTOR:
        raise TenforgeError(f"model {row['model_id']} was trained on {spec.get('extractor')!r} "
                            f"features but tuning feeds {FEATURE_EXTRACTOR!r}; pick another "
                            f"model (`tenforge models`) or --cost-model {BASELINE}")
    if spec.get("asm"):  # models/ms_adapter.py would refuse it too, once the flow had started
        raise TenforgeError(f"model {row['model_id']} reads the assembly columns, a build per "
                            "candidate: it ranks stored candidates, not a search's; pick a "
                            f"model trained without asm_features or --cost-model {BASELINE} "
                            "(an asm model can re-order a model's top picks: --rerank-model)")
    names = list(spec.get("hardware") or [])
    kinds = queries.target_kinds(store, names)
    if kinds and profile.target_kind not in kinds:
        raise TenforgeError(f"model {row['model_id']} was trained on {', '.join(sorted(kinds))} "
                            f"targets only, not {profile.target_kind}; pick another model or "
                            f"--cost-model {BASELINE}")


def registered_model(store: Store, model_id: str) -> dict[str, Any]:
    """Model `model_id`'s row, its artifact known to be on disk: one-line errors for an
    unknown id or a missing artifact."""
    row = store.model_row(model_id)  # an unknown id fails here, in one line
    if not Path(row["path"]).exists():
        raise TenforgeError(f"model {model_id}'s artifact {row['path']} is missing; retrain it "
                            "or pick another model")
    return row


def rerank_artifact(db: str, model_id: str, profile: HardwareProfile,
                    instant_or_warm: bool) -> str:
    """The artifact of `db`'s model `model_id` as a re-rank model for `profile`, checked
    before any work (tasks.asm_rerank.checked_rerank_model): one-line errors also for a
    search that measures no model's picks first (`instant_or_warm` False)."""
    from tasks.asm_rerank import Rerank, checked_rerank_model

    if not instant_or_warm:
        raise TenforgeError("--rerank-model re-orders the learned model's picks before they are "
                            "measured: use it with --scheduler instant or a --warm-start")
    if not Path(db).exists():
        raise TenforgeError(f"store {db} does not exist, so it has no model {model_id!r}")
    with Store(db, read_only=True) as store:
        path = str(registered_model(store, model_id)["path"])
    checked_rerank_model(Rerank(path), profile)
    return path



def check_loadable(path: str) -> None:
    """Load the artifact once per process and file version: the CLI's validation and the
    flow's (same process) then pay one load, and the tuning run the other."""
    _loaded(path, Path(path).stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _loaded(path: str, _mtime_ns: int) -> bool:
    from models.registry import load_model

    load_model(path)
    return True


def choose_model(db: str, profile: HardwareProfile,
                 cost_model: str | None) -> tuple[str, str | None, str]:
    """(model id or BASELINE, its artifact (None: BASELINE), one line saying which and why)
    for `cost_model` as asked (None: the store's best for `profile`, else the shipped one)."""
    choice = (f"cost model {BASELINE}: as asked" if cost_model == BASELINE else
              f"cost model {BASELINE}: no registered model (train one with `tenforge search` "
              "or `tenforge onboard`)")
    registered = None if cost_model is not None else _best_registered(db, profile.name)
    shipped = None
    if cost_model == SHIPPED:
        shipped = require_shipped_for(profile)
    elif cost_model is None and registered is None:
        shipped = shipped_for(profile)  # a fresh install: the model tenforge ships, if any
    if shipped is not None:
        check_loadable(str(shipped.path))
        return (shipped.model_id, str(shipped.path),
                shipped_choice(shipped, profile.name, asked=cost_model == SHIPPED))
    if cost_model == BASELINE:
        return BASELINE, None, choice
    if not Path(db).exists():
        if cost_model is not None:
            raise TenforgeError(f"store {db} does not exist, so it has no model "
                                f"{cost_model!r}; train one or use --cost-model {BASELINE}")
        return BASELINE, None, choice
    chosen = cost_model or registered
    if chosen is None:
        return BASELINE, None, choice
    with Store(db, read_only=True) as store:
        row = registered_model(store, chosen)
        check_model_fits(store, row, profile)
        check_loadable(row["path"])  # a damaged artifact: refused here, not mid-run
        return chosen, row["path"], explain_choice(
            row, profile.name, asked=cost_model is not None,
            top1_here=queries.measured_top1(store, chosen, profile.name))
