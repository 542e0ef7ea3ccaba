"""The cost models shipped in the repository (`dataset/models/<id>/`), so a fresh install ranks
candidates from its first retune: `retune` tunes with one when the store has no model of its
own, `onboard` fine-tunes one when the store has no pre-trained model, and `tenforge models
evaluate shipped` scores one.

A shipped model is an ordinary model artifact (model.json + weights in a safe format: JSON
trees, or tensors read with weights_only) whose lineage says `shipped: true`, which shards
(names and checksums: the seed's, and dataset/extra/'s beyond the seed's cap) trained it,
which networks were held out of its training, and what it scored on them.
`bench/ship_model.py` makes one; nothing here trains.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from core.errors import TenforgeError
from core.hardware import HardwareProfile

DATASET_DIR = Path(__file__).resolve().parents[1] / "dataset"
SHIPPED_DIR = DATASET_DIR / "models"
SHIPPED = "shipped"  # what a user types for "the shipped model for this hardware"


@dataclass(frozen=True)
class ShippedModel:
    model_id: str
    path: Path
    kind: str
    arch: str  # the CPU architecture of the profiles that trained it (x86_64)
    target_kind: str  # llvm
    meta: dict[str, Any]  # model.json: config and lineage

    @property
    def lineage(self) -> dict[str, Any]:
        return self.meta.get("lineage") or {}


def lineage_shard_path(name: str) -> Path:
    """Where a shard a shipped model's lineage names lies. Lineages name shards from dataset/
    (seed/<profile>/<shard>.json, extra/<set>/<shard>.json, device/<set>/<shard>.json); a model
    shipped before data beyond the seed trained one named them from dataset/seed/
    (<profile>/<shard>.json: a profile is never a folder of dataset/ itself)."""
    first = Path(name).parts[0]
    return DATASET_DIR / name if (DATASET_DIR / first).is_dir() else DATASET_DIR / "seed" / name


@lru_cache(maxsize=1)
def shipped_models(folder: Path = SHIPPED_DIR) -> tuple[ShippedModel, ...]:
    """Every shipped model, newest first (ids end in their UTC stamp; sorting on the whole id
    would rank a `shipped-xgb-` above a newer `shipped-lgbm-`)."""
    from models.base import META_FILE

    found = []
    for meta_path in sorted(folder.glob(f"*/{META_FILE}")):
        meta = json.loads(meta_path.read_text())
        lineage = meta.get("lineage") or {}
        if lineage.get("shipped"):
            found.append(ShippedModel(meta_path.parent.name, meta_path.parent, meta["kind"],
                                      lineage["arch"], lineage["target_kind"], meta))
    return tuple(sorted(found, key=lambda m: m.model_id.rsplit("-", 1)[-1], reverse=True))


def both_held_out(holdout: tuple[str, ...], split: dict[str, Any]) -> tuple[str, ...]:
    """The networks of `holdout` that a model trained on `split` (its lineage's split) kept out
    too, in `holdout`'s order; none unless that split was by_network. Only these compare two
    models fairly: on any other network one of them trained, which would flatter it."""
    held = set(split.get("holdout") or ()) if split.get("kind") == "by_network" else set()
    return tuple(n for n in holdout if n in held)


def shipped_to_beat(target_kind: str, arch: str, holdout: tuple[str, ...],
                    folder: Path = SHIPPED_DIR
                    ) -> tuple[ShippedModel | None, tuple[str, ...], str]:
    """The model shipped now in `folder` for this target kind and arch, which a new one held out
    on `holdout` must beat to replace it; the networks to compare them on, those both held out
    (on any other network one of them trained, which would flatter it); and why none where
    there is none. A new model that holds out more networks than the shipped one is still
    compared, on the shipped one's: holding out more must not let a model skip the gate."""
    current = shipped_for_target(target_kind, arch, folder)
    if current is None:
        return None, (), f"no model shipped for {target_kind}, {arch}"
    split = current.lineage.get("split") or {}
    held = set(split.get("holdout") or ())
    common = both_held_out(holdout, split)
    if not common:
        return None, (), (f"{current.model_id} held out {', '.join(sorted(held)) or 'nothing'}, "
                          f"none of {', '.join(holdout)}: not compared")
    return current, common, (f"{current.model_id}, held out {', '.join(sorted(held))}; "
                             f"compared on {', '.join(common)}")


def shipped_for(profile: HardwareProfile) -> ShippedModel | None:
    """The newest shipped model trained on this kind of target and CPU architecture."""
    return shipped_for_target(profile.target_kind, profile.arch)


def shipped_for_target(target_kind: str, arch: str,
                       folder: Path = SHIPPED_DIR) -> ShippedModel | None:
    return next((m for m in shipped_models(folder)
                 if m.target_kind == target_kind and m.arch == arch), None)


def require_shipped_for(profile: HardwareProfile) -> ShippedModel:
    return require_shipped_for_target(profile.name, profile.target_kind, profile.arch)


def require_shipped_for_target(name: str, target_kind: str, arch: str) -> ShippedModel:
    """The shipped model for profile `name` of this target kind and arch, or a one-line error
    naming what is shipped."""
    found = shipped_for_target(target_kind, arch)
    if found is None:
        have = ", ".join(f"{m.model_id} ({m.target_kind}, {m.arch})" for m in shipped_models())
        raise TenforgeError(f"no shipped model for {name} ({target_kind}, {arch}); shipped: "
                            f"{have or 'none'}. Train one here: `tenforge collect`, then "
                            "`tenforge search`")
    return found


def model_row(shipped: ShippedModel) -> dict[str, Any]:
    """The models-table row that registers a shipped model in a store (its artifact stays in
    the repository; artifacts are never edited)."""
    lineage = shipped.lineage
    return {
        "model_id": shipped.model_id, "kind": shipped.kind, "path": str(shipped.path),
        "config_json": json.dumps(shipped.meta["config"], sort_keys=True),
        "data_spec_json": json.dumps(lineage["data_spec"], sort_keys=True),
        "data_fingerprint": lineage["data_fingerprint"],
        "split_json": json.dumps(lineage["split"], sort_keys=True),
        "train_rows": lineage["train_rows"], "study_name": None, "trial_number": None,
        "parent_model_id": None,
        "metrics_json": json.dumps(lineage["metrics"], sort_keys=True),
        "train_s": lineage["train_s"], "flow_run_id": None,
        "tvm_version": lineage["tvm_version"]}


def register_shipped(db: str, shipped: ShippedModel) -> str:
    """Register `shipped` in store `db` unless it is there already; its id."""
    from storage.store import Store

    with Store(db) as store:
        if not store.has_model(shipped.model_id):
            store.register_model(model_row(shipped))
    return shipped.model_id
