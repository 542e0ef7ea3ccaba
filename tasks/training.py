"""Plain steps of the search, pretrain and transfer flows (no Prefect): validate parameters,
load the data a spec names, split it, run the Optuna study with every trial copied into the
store, train or fine-tune models, save them as artifacts and register them with lineage.

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

import numpy as np

from core.errors import TenforgeError
from models.base import META_FILE
from models.dataset import Dataset, DataSpec, load_dataset
from models.splits import Split, SplitSpec, make_split, sample_by_task
from storage.queries import measured_profiles
from storage.store import Store


def default_hardware(db: str) -> list[str]:
    """Every profile with measurements in the store."""
    with Store(db, read_only=True) as store:
        names = measured_profiles(store)
    if not names:
        raise TenforgeError(f"store {db} has no measurements; run `tenforge collect` or "
                            "`tenforge dataset load-seed` first")
    return names


def source_profiles_for(db: str, hardware: str) -> list[str]:
    """The profiles to pre-train a model for `hardware` on: every other profile with
    measurements of the same target kind (a CPU model learns from CPUs: a GPU schedule's
    features describe thread bindings and shared memory, not vectors and caches), or every
    other profile where none is of that kind."""
    from storage.queries import stored_target
    from tasks.hardware import resolve_profile

    kind = resolve_profile(hardware).target_kind
    others = [h for h in default_hardware(db) if h != hardware]
    with Store(db, read_only=True) as store:
        same = [h for h in others if (stored_target(store, h) or ("",))[0] == kind]
    return same or others


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


def register(db: str, model: Any, seen: Dataset, data_s: DataSpec, split: dict | None,
             train_rows: int, fingerprint: str, metrics: dict, train_s: float, seed: int,
             flow_run_id: str | None, study_name: str | None = None,
             trial_number: int | None = None, parent_model_id: str | None = None,
             extra: dict | None = None) -> dict[str, Any]:
    """Save `model` as a new artifact next to the store and record it in the models table;
    `seen`: the rows that shaped it (train and early-stopping valid), whose networks its lineage
    names, so an evaluation can tell seen networks from unseen ones."""
    from core.tvm_env import tvm_version

    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    model_id = f"{model.kind}-{stamp}-{uuid.uuid4().hex[:6]}"
    lineage = {"data_spec": data_s.to_json(), "data_fingerprint": fingerprint, "split": split,
               "seed": seed, "study": study_name, "trial": trial_number,
               "parent_model_id": parent_model_id, "flow_run_id": flow_run_id,
               "store": str(db), "trained_networks": seen.network_families(), **(extra or {})}
    path = model.save(artifact_dir(db) / model_id, lineage=lineage)
    with Store(db) as store:
        store.register_model({
            "model_id": model_id, "kind": model.kind, "path": str(path),
            "config_json": json.dumps(asdict(model.config), sort_keys=True),
            "data_spec_json": json.dumps(data_s.to_json(), sort_keys=True),
            "data_fingerprint": fingerprint,
            "split_json": json.dumps(split, sort_keys=True) if split else None,
            "train_rows": train_rows, "study_name": study_name, "trial_number": trial_number,
            "parent_model_id": parent_model_id,
            "metrics_json": json.dumps(_finite(metrics), sort_keys=True),
            "train_s": train_s, "flow_run_id": flow_run_id, "tvm_version": tvm_version()})
    return {"model_id": model_id, "path": str(path), "metrics": metrics, "train_s": train_s}


def train_and_register(db: str, data_spec: dict, split_spec: dict, family: str,
                       params: dict[str, Any], seed: int, study_name: str | None = None,
                       trial_number: int | None = None, flow_run_id: str | None = None,
                       log: Callable[[str], None] = print,
                       register_if_better: bool = False) -> dict[str, Any]:
    """Train `family` with `params` on the train part (valid for early stopping), measure it on
    the test part, save it as an artifact and register it with its lineage. With
    `register_if_better` (a by_network split), only if it ranks the held-out networks better
    than every model that held any of them out too, on those both held out
    (tasks/model_gate.py)."""
    from models.evaluate import evaluate, network_scores
    from models.registry import create_model

    data, split, data_s, split_s = data_and_split(db, data_spec, split_spec)
    model = create_model(family, seed=seed, **params)
    train = data.subset(split.train)
    info = model.fit(train, data.subset(split.valid))
    test = data.subset(split.test)
    metrics = evaluate(model, test)
    metrics["networks_top1"] = network_scores(test, model.predict(test), k=1)
    verdict = None  # no gate asked for: registered whatever it scores
    if register_if_better and split_s.kind == "by_network":
        from tasks.model_gate import gate, not_registered

        verdict = gate(db, model, test, split_s.holdout)
        metrics["mean_network_top1"] = verdict["mean_network_top1"]
        if not verdict["wins"]:
            log(not_registered(verdict, split_s.holdout))
            return {"model_id": None, "path": None, "test": metrics, "gate": verdict}
    seen = data.subset(np.concatenate([split.train, split.valid]))
    out = register(db, model, seen, data_s, asdict(split_s), len(train), train.fingerprint(),
                   metrics, info["train_s"], seed, flow_run_id, study_name, trial_number)
    log(f"registered {out['model_id']} at {out['path']}: test peak1 {metrics['peak1']:.4f}, "
        f"pairwise {metrics['pairwise']:.4f}")
    return {**out, "test": metrics, "gate": verdict}


def model_config(db: str, model_id: str) -> tuple[str, dict[str, Any]]:
    """(kind, config) of a registered model, e.g. the search winner to pre-train with."""
    with Store(db, read_only=True) as store:
        row = store.model_row(model_id)
    config = json.loads(row["config_json"])
    return row["kind"], config


def pretrain(db: str, hardware: list[str], networks: list[str], family: str | None,
             params: dict[str, Any], from_model: str | None, seed: int,
             flow_run_id: str | None, log: Callable[[str], None] = print,
             holdout: tuple[str, ...] = (), register_if_better: bool = False,
             drop_tasks_of: tuple[str, ...] = ()) -> dict[str, Any]:
    """Train on every measurement of the source profiles (15% of tasks held for early stopping
    and the reported validation metrics) and register the model. With `holdout` networks, they
    are kept out (a by_network split, validation on whole networks) and scored; with
    `register_if_better`, the model is registered only if it ranks them better than every
    model that held any of them out too, on those both held out (tasks/model_gate.py).
    `drop_tasks_of`: networks none of whose tasks may train the model, not even one a
    training network shares (for a model that will then tune those networks as unseen ones:
    bench/tuning_matrix.py)."""
    from models.evaluate import evaluate
    from models.registry import create_model

    if from_model:
        family, config = model_config(db, from_model)
        params = {**config, **params}
    params = {**params, "seed": seed}
    model = create_model(family, **params)
    data_s = DataSpec(hardware=tuple(hardware), networks=tuple(networks),
                      traces=model.takes_traces, asm=model.takes_asm)
    data = load_dataset(db, data_s)
    if drop_tasks_of:
        from models.splits import rows_of_networks

        data = data.subset(np.flatnonzero(~rows_of_networks(data, drop_tasks_of)))
    split_s = (SplitSpec("by_network", seed=seed, valid_fraction=0.15, holdout=holdout)
               if holdout else
               SplitSpec("by_task", seed=seed, valid_fraction=0.15, test_fraction=0.0))
    split = make_split(data, split_s)
    train, valid = data.subset(split.train), data.subset(split.valid)
    info = model.fit(train, valid if len(valid) else None)
    metrics = {"valid": evaluate(model, valid) if len(valid) else {}}
    if holdout:
        from tasks.model_gate import gate, not_registered

        verdict = gate(db, model, data.subset(split.test), holdout)
        metrics["mean_network_top1"] = verdict["mean_network_top1"]
        if register_if_better and not verdict["wins"]:
            log(not_registered(verdict, holdout))
            return {"model_id": None, "path": None, "metrics": metrics, "gate": verdict}
    seen = data.subset(np.concatenate([split.train, split.valid]))  # not the held-out part
    out = register(db, model, seen, data_s, asdict(split_s), len(train), train.fingerprint(),
                   metrics, info["train_s"], seed, flow_run_id,
                   extra={"pretrained_on": list(hardware), "config_from": from_model,
                          **({"tasks_dropped_of": list(drop_tasks_of)} if drop_tasks_of else {})})
    log(f"pre-trained {out['model_id']} on {', '.join(hardware)}: {len(train)} candidates, "
        f"{info['train_s']:.1f} s")
    return out


def transfer(db: str, parent_model_id: str, hardware: str, samples: int | None,
             strategy: str, networks: list[str], seed: int, flow_run_id: str | None,
             log: Callable[[str], None] = print, baseline: str | None = None
             ) -> dict[str, Any]:
    """Fine-tune a registered model to `hardware` from `samples` target measurements (None =
    all) drawn from the target's training tasks, whole tasks at a time (models.splits.
    sample_by_task); score it on held-out target tasks; register it as a child of the
    parent."""
    from models.evaluate import evaluate
    from models.registry import load_model
    from models.transfer import fine_tune

    with Store(db, read_only=True) as store:
        parent = store.model_row(parent_model_id)
    parent_model = load_model(parent["path"])
    data_s = DataSpec(hardware=(hardware,), networks=tuple(networks),
                      traces=parent_model.takes_traces, asm=parent_model.takes_asm)
    data = load_dataset(db, data_s)
    split_s = SplitSpec(seed=seed, **TRANSFER_SPLIT)
    split = make_split(data, split_s)
    if split.test.size == 0:
        raise TenforgeError(f"{hardware} has too few tasks to hold some out "
                            f"({data.describe()['groups']}); collect more networks")
    pool = split.train
    if samples is not None and samples > pool.size:
        raise TenforgeError(f"asked for {samples} target samples but {hardware} has only "
                            f"{pool.size} measurements in its training tasks")
    chosen = pool if samples is None else sample_by_task(data, pool, samples, seed)
    train, test = data.subset(chosen), data.subset(split.test)
    model, info = fine_tune(parent["path"], strategy, train, seed=seed)
    metrics = evaluate(model, test)
    before = evaluate(load_model(parent["path"]), test)  # the same held-out tasks, not tuned
    inherited = json.loads((Path(parent["path"]) / META_FILE).read_text()).get(
        "lineage", {}).get("trained_networks", [])
    out = register(db, model, train, data_s, {**asdict(split_s), "samples": len(chosen)},
                   len(train), train.fingerprint(), metrics, info["train_s"], seed,
                   flow_run_id, parent_model_id=parent_model_id,
                   extra={"strategy": strategy, "target": hardware, "trained_networks": sorted(
                       set(inherited) | set(train.network_families()))})
    log(f"transferred {parent_model_id} -> {out['model_id']} ({strategy}, {len(chosen)} "
        f"samples of {hardware}): test peak1 {metrics['peak1']:.4f} (parent as is: "
        f"{before['peak1']:.4f})")
    out = {**out, "samples": len(chosen), "test_tasks": int(len(set(test.group.tolist()))),
           "parent_test": _finite(before)}
    with Store(db) as store, store.transaction():  # both, measured on the same held-out tasks
        for model_id, scores in ((parent_model_id, before), (out["model_id"], metrics)):
            store.record_evaluation(model_id, hardware, _finite(scores), out["test_tasks"],
                                    asdict(split_s), flow_run_id)
    if baseline:  # the same samples, from scratch, scored on the same held-out tasks
        from models.registry import create_model

        scratch = create_model(baseline, seed=seed)
        scratch.fit(train, None)
        out["baseline"] = baseline
        out["baseline_test"] = _finite(evaluate(scratch, test))
    return out


def _finite(value: Any) -> Any:
    """NaN (a metric undefined on this data) -> None, so the JSON is valid for DuckDB too."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, float) and value != value:
        return None
    return value


TRANSFER_SPLIT = dict(kind="by_task", valid_fraction=0.0, test_fraction=0.3)
