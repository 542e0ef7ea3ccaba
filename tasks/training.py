"""Plain steps of the search flow (no Prefect): load the data a spec names, split it, run the
Optuna study with every trial copied into the store, train the winner and register it.

Datasets never cross a task boundary: each step rebuilds its dataset from the store (a few
seconds) and passes on keys and small values only.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from models.dataset import DataSpec, Dataset, load_dataset
from models.splits import Split, SplitSpec, make_split
from storage.store import Store
from tenforge.errors import TenforgeError


def default_hardware(db: str) -> list[str]:
    """Every profile with measurements in the store."""
    with Store(db, read_only=True) as store:
        names = [n for (n,) in store.query(
            "SELECT DISTINCT h.name FROM measurements m JOIN candidates c USING (candidate_id) "
            "JOIN hardware h USING (hardware_id) ORDER BY 1")]
    if not names:
        raise TenforgeError(f"store {db} has no measurements; run `tenforge collect` or "
                            "`tenforge dataset load-seed` first")
    return names


def artifact_dir(db: str) -> Path:
    """Model artifacts live next to the store: <store folder>/models/."""
    return Path(db).resolve().parent / "models"


def study_storage(db: str) -> Path:
    """Optuna's journal for this store (one file, many studies)."""
    path = Path(db).resolve()
    return path.with_name(path.stem + ".optuna.journal")


def data_and_split(db: str, data_spec: dict, split_spec: dict
                   ) -> tuple[Dataset, Split, DataSpec, SplitSpec]:
    data_s = DataSpec.from_json(data_spec)
    split_s = SplitSpec(**split_spec)
    data = load_dataset(db, data_s)
    split = make_split(data, split_s)
    for part in ("valid", "test"):
        if getattr(split, part).size == 0:
            raise TenforgeError(f"split {split_s.kind} leaves the {part} part empty "
                                f"({split.sizes()}); use more data, more tasks or other fractions")
    return data, split, data_s, split_s


def default_study_name(data_s: DataSpec, split_s: SplitSpec) -> str:
    hardware = "+".join(data_s.hardware)
    nets = "+".join(data_s.networks) or "all"
    holdout = f"-{'+'.join(split_s.holdout)}" if split_s.holdout else ""
    return f"{hardware}.{nets}.{split_s.kind}{holdout}.seed{split_s.seed}"


def run_study(db: str, data_spec: dict, split_spec: dict, search_spec: dict,
              study_name: str | None, flow_run_id: str | None,
              log: Callable[[str], None] = print) -> dict[str, Any]:
    from models.search import SearchSpec, run_search

    search_s = SearchSpec(**search_spec)
    data, split, data_s, split_s = data_and_split(db, data_spec, split_spec)
    name = study_name or default_study_name(data_s, split_s)
    log(f"data {data.describe()}; split {split_s.kind} {split.sizes()}")

    def copy_trial(row: dict[str, Any]) -> None:
        with Store(db) as store:
            store.upsert_trial({**row, "flow_run_id": flow_run_id})

    result = run_search(data.subset(split.train), data.subset(split.valid), search_s, name,
                        study_storage(db), on_trial=copy_trial, log=log)
    return {"study_name": result.study_name, "best_trial": result.best_trial,
            "family": result.best_family, "params": result.best_params,
            "valid_value": result.best_value, "trials": len(result.trials)}


def train_and_register(db: str, data_spec: dict, split_spec: dict, family: str,
                       params: dict[str, Any], seed: int, study_name: str | None = None,
                       trial_number: int | None = None, flow_run_id: str | None = None,
                       log: Callable[[str], None] = print) -> dict[str, Any]:
    """Train `family` with `params` on the train part (valid for early stopping), measure it on
    the test part, save it as an artifact and register it with its lineage."""
    from models.evaluate import evaluate, network_scores
    from models.registry import create_model
    from tasks.tvm_env import tvm_version

    data, split, data_s, split_s = data_and_split(db, data_spec, split_spec)
    model = create_model(family, seed=seed, **params)
    info = model.fit(data.subset(split.train), data.subset(split.valid))
    test = data.subset(split.test)
    metrics = evaluate(model, test)
    metrics["networks_top1"] = network_scores(test, model.predict(test), k=1)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    model_id = f"{family}-{stamp}-{uuid.uuid4().hex[:6]}"
    lineage = {"data_spec": data_s.to_json(), "data_fingerprint": data.fingerprint(),
               "split": asdict(split_s), "seed": seed, "study": study_name,
               "trial": trial_number, "flow_run_id": flow_run_id, "store": str(db)}
    path = model.save(artifact_dir(db) / model_id, lineage=lineage)
    with Store(db) as store:
        store.register_model({
            "model_id": model_id, "kind": family, "path": str(path),
            "config_json": json.dumps(asdict(model.config), sort_keys=True),
            "data_spec_json": json.dumps(data_s.to_json(), sort_keys=True),
            "data_fingerprint": data.fingerprint(),
            "split_json": json.dumps(asdict(split_s), sort_keys=True),
            "train_rows": int(split.train.size), "study_name": study_name,
            "trial_number": trial_number, "parent_model_id": None,
            "metrics_json": json.dumps(_finite(metrics), sort_keys=True),
            "train_s": info["train_s"], "flow_run_id": flow_run_id, "tvm_version": tvm_version()})
    log(f"registered {model_id} at {path}: test peak1 {metrics['peak1']:.4f}, "
        f"pairwise {metrics['pairwise']:.4f}")
    return {"model_id": model_id, "path": str(path), "test": metrics, "train_s": info["train_s"]}


def _finite(value: Any) -> Any:
    """NaN (a metric undefined on this data) -> None, so the JSON is valid for DuckDB too."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return None
    return value


def validate_search(db: str, hardware: list[str] | None, networks: list[str] | None,
                    split: str, holdout: list[str] | None, families: list[str] | None,
                    trials: int, time_budget_s: float, metric: str, multi_objective: bool,
                    seed: int, max_epochs: int, study: str | None) -> dict[str, Any]:
    """Check every search parameter against the store before any work; return the specs."""
    from models.search import FAMILIES, SearchSpec, open_study_signature

    if not Path(db).exists():
        raise TenforgeError(f"store {db} does not exist; collect data or load the seed first "
                            "(`tenforge dataset load-seed --db ...`)")
    data_spec = DataSpec(hardware=tuple(hardware or default_hardware(db)),
                         networks=tuple(networks or ()))
    split_spec = SplitSpec(kind=split, seed=seed, holdout=tuple(holdout or ()))
    search_spec = SearchSpec(families=tuple(families or FAMILIES), trials=trials,
                             time_budget_s=time_budget_s, metric=metric,
                             multi_objective=multi_objective, seed=seed, max_epochs=max_epochs)
    data_and_split(db, data_spec.to_json(), asdict(split_spec))
    name = study or default_study_name(data_spec, split_spec)
    found = open_study_signature(name, study_storage(db))
    if found is not None and found != search_spec.signature():
        raise TenforgeError(f"study {name!r} exists with another search space "
                            f"({json.dumps(found)}); pick another --study name or the same "
                            "families, metric and epochs")
    return {"data_spec": data_spec.to_json(), "split_spec": asdict(split_spec),
            "search_spec": asdict(search_spec), "study": name}
