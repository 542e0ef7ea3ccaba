"""`tenforge models evaluate`: score one cost model on any store's measurements, network by
network, the way the published cost models are compared (TenSet's network-level top-k).

The model is a registered model id (in the store being scored), a model artifact folder, or
`shipped` (tasks/shipped.py); its features must be the store's. Which networks it trained on
comes from its lineage, so the table can say where a score is on data the model has seen.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core.errors import TenforgeError


@dataclass(frozen=True)
class ModelRef:
    """A model to score, resolved: where its artifact is and what its lineage says."""

    model_id: str
    kind: str
    path: Path
    extractor: str
    trained_on: dict  # the lineage's data spec, split and trained networks (when recorded)


def resolve_model(ref: str, db: str, hardware: str = "local") -> ModelRef:
    """A registered id in `db`, a model artifact folder, or `shipped`: the model tenforge
    ships for `hardware`'s kind of CPU."""
    from models.base import META_FILE
    from storage.store import Store
    from tasks.shipped import SHIPPED, require_shipped_for_target

    folder = Path(ref)
    if ref == SHIPPED:
        folder = require_shipped_for_target(hardware, *_target_of(hardware, db)).path
    model_id = None  # an artifact folder names itself (its lineage, else its folder)
    if not (folder / META_FILE).is_file():
        if not Path(db).exists():
            raise TenforgeError(f"no store at {db}, so no registered model {ref!r}; give a "
                                "store with --db, or a model artifact folder")
        with Store(db, read_only=True) as store:
            row = store.model_row(ref)
        folder, model_id = Path(row["path"]), ref
        if not (folder / META_FILE).is_file():
            raise TenforgeError(f"model {ref!r} is registered at {folder}, which holds no "
                                "artifact (moved or deleted?)")
    meta = json.loads((folder / META_FILE).read_text())
    lineage = meta.get("lineage") or {}
    model_id = model_id or lineage.get("model_id") or folder.name
    spec = lineage.get("data_spec") or {}
    return ModelRef(model_id, meta.get("kind", "?"), folder,
                    spec.get("extractor", "per_store_feature_v1"),
                    {"data_spec": spec, "split": lineage.get("split") or {},
                     "networks": lineage.get("trained_networks")})


def _target_of(hardware: str, db: str) -> tuple[str, str]:
    """(target kind, arch) of a profile named here, or else of one the store holds data of:
    a fleet's central store scores models on machines it cannot run itself."""
    from storage.queries import stored_target
    from storage.store import Store
    from tasks.hardware import resolve_profile

    try:
        profile = resolve_profile(hardware)
        return profile.target_kind, profile.arch
    except TenforgeError as unknown_here:
        if not Path(db).exists():
            raise
        with Store(db, read_only=True) as store:
            found = stored_target(store, hardware)
        if found is None:
            raise TenforgeError(f"{unknown_here}; nor does the store {db} hold data of it") \
                from None
        return found


def evaluate_model(ref: str, db: str, hardware: tuple[str, ...] = (),
                   networks: tuple[str, ...] = (), latency: str = "mean") -> dict:
    """`network_report` of model `ref` on store `db`'s measurements of `hardware` (default:
    every profile with measurements) and `networks` (default: all), each candidate charged the
    `latency` statistic of its repeats (models.dataset.LATENCY_STATISTICS), with what the model
    is and whether each network was in its training data (None: its lineage does not say)."""
    from models.dataset import DataSpec, load_dataset, network_family, network_name
    from models.evaluate import network_report
    from models.registry import load_model
    from storage.queries import measured_profiles
    from storage.store import Store

    model_ref = resolve_model(ref, db, hardware[0] if hardware else "local")
    if not Path(db).exists():
        raise TenforgeError(f"no store at {db}; give one with measurements (--db)")
    if not hardware:
        with Store(db, read_only=True) as store:
            hardware = tuple(measured_profiles(store))
        if not hardware:
            raise TenforgeError(f"{db} holds no measurements to score a model on; collect "
                                "some first (`tenforge collect`)")
    # stored names: every size of a name is one `networks` row name; a prepared graph is a
    # name of its own (resnet18+nhwc, core/graphs.py), so it is not folded into its family
    stored = tuple(sorted({network_name(n) for n in networks}))
    model = load_model(model_ref.path)
    data = load_dataset(db, DataSpec(hardware=hardware, networks=stored,
                                     extractor=model_ref.extractor, traces=model.takes_traces,
                                     asm=model.takes_asm, latency=latency))
    report = network_report(model, data, networks)
    trained = model_ref.trained_on
    seen = None if trained["networks"] is None else set(trained["networks"])
    held = set(trained["split"].get("holdout") or ()) \
        if trained["split"].get("kind") == "by_network" else set()
    for net, values in report["networks"].items():
        # a prepared graph (NAME+GRAPH) is seen only if its own tasks were: the family's
        # exported tasks are other programs (Dataset.network_families)
        values["in_training"] = (network_name(net) in seen or net in seen) if seen is not None \
            else (False if network_family(net) in held or net in held else None)
    return {"model": model_ref.model_id, "kind": model_ref.kind, "store": str(db),
            "latency": latency,
            "trained_on_hardware": trained["data_spec"].get("hardware", []),
            "split": trained["split"], **report}
