"""The Optuna search over cost-model families and their hyperparameters (no Prefect here).

The space is conditional: a trial first picks a family, then only that family's parameters
(named `<family>.<param>`). The objective is a ranking metric on the validation split (top-1
peak score by default); with `multi_objective` the study maximizes it and pairwise accuracy and
minimizes training time (Pareto front; Optuna cannot prune multi-objective trials). Neural trials
report validation peak score every epoch and the median pruner stops hopeless ones.

Studies live in an Optuna journal file next to the store, so a re-run with the same name
continues the study: `trials` is the total wanted, not the number to add.
"""

from __future__ import annotations

import json
import math
import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import optuna

from core.errors import TenforgeError
from core.procs import pid_alive
from models.dataset import Dataset
from models.evaluate import OBJECTIVES, ranking_metrics
from models.registry import FAMILIES, create_model

NEURAL = ("mlp", "attention", "bilstm_attention")
METRICS = OBJECTIVES  # models.evaluate.RANKING_METRICS that a search may maximize
SPACE_VERSION = 4  # bump when suggest_params changes: old studies then refuse to resume
TRACE_FAMILIES = ("xgb", "lgbm")  # families that can take the trace summary too


@dataclass(frozen=True)
class SearchSpec:
    families: tuple[str, ...] = FAMILIES
    trials: int = 20
    time_budget_s: float = 900.0
    metric: str = "peak1"
    multi_objective: bool = False
    seed: int = 0
    max_epochs: int = 30

    def __post_init__(self) -> None:
        object.__setattr__(self, "families", tuple(self.families))
        unknown = [f for f in self.families if f not in (*FAMILIES, "metaschedule_xgb")]
        if unknown or not self.families:
            raise TenforgeError(f"unknown model family {', '.join(unknown) or '(none given)'}; "
                                f"choose from {', '.join(FAMILIES)}")
        if self.metric not in METRICS:
            raise TenforgeError(f"unknown search metric {self.metric!r}; choose one of "
                                f"{', '.join(METRICS)}")
        if self.trials < 1 or self.time_budget_s <= 0:
            raise TenforgeError(f"trials must be >= 1 and the time budget > 0 s, got "
                                f"{self.trials} trials and {self.time_budget_s} s")

    def signature(self) -> dict[str, Any]:
        """What a study must agree on to be resumed (its search space and objectives)."""
        return {"space_version": SPACE_VERSION, "families": list(self.families),
                "metric": self.metric, "multi_objective": self.multi_objective,
                "max_epochs": self.max_epochs}


def suggest_params(trial: optuna.Trial, family: str, max_epochs: int) -> dict[str, Any]:
    """The hyperparameters of `family` for this trial."""
    p = f"{family}."
    params: dict[str, Any] = {"loss": trial.suggest_categorical(p + "loss", ["rank", "regression"])}
    if family in ("xgb", "lgbm"):
        params.update(
            n_estimators=trial.suggest_int(p + "n_estimators", 100, 600, step=50),
            max_depth=trial.suggest_int(p + "max_depth", 4, 12),
            learning_rate=trial.suggest_float(p + "learning_rate", 0.02, 0.3, log=True),
            min_child_weight=trial.suggest_float(p + "min_child_weight", 0.5, 10, log=True),
            subsample=trial.suggest_float(p + "subsample", 0.6, 1.0),
            colsample=trial.suggest_float(p + "colsample", 0.5, 1.0),
            reg_lambda=trial.suggest_float(p + "reg_lambda", 0.1, 10, log=True),
            # the feature set is searched too (models/trace_features.py, bench/feature_sets.py)
            trace_features=trial.suggest_categorical(p + "trace_features", [False, True]),
            tile_features=trial.suggest_categorical(p + "tile_features", [False, True]),
            task_weight_power=trial.suggest_categorical(p + "task_weight_power",
                                                        [0.0, 0.25, 0.5]))
    elif family in NEURAL:
        params.update(
            hidden=trial.suggest_categorical(p + "hidden", [32, 64, 128, 256]),
            dropout=trial.suggest_float(p + "dropout", 0.0, 0.3),
            lr=trial.suggest_float(p + "lr", 1e-4, 3e-3, log=True),
            batch_size=trial.suggest_categorical(p + "batch_size", [128, 256, 512]),
            epochs=max_epochs)
        if family == "attention":  # (bilstm_attention keeps the paper's 3 layers, 2 heads)
            params.update(num_layers=trial.suggest_int(p + "num_layers", 1, 3),
                          heads=trial.suggest_categorical(p + "heads", [2, 4]))
    return params


@dataclass
class SearchResult:
    study_name: str
    best_trial: int
    best_family: str
    best_params: dict[str, Any]
    best_value: float
    trials: list[dict[str, Any]] = field(default_factory=list)


def trial_row(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A finished trial as a row of the store's search_trials table."""
    values = trial.values if trial.values is not None else None
    return {"study_name": study.study_name, "trial_number": trial.number,
            "state": trial.state.name, "family": trial.params.get("family"),
            "params_json": json.dumps(trial.params, sort_keys=True),
            "values_json": json.dumps(values),
            "metrics_json": json.dumps(trial.user_attrs.get("metrics", {}), sort_keys=True),
            "started_at": trial.datetime_start, "finished_at": trial.datetime_complete}


def _storage(storage_path: Path) -> optuna.storages.BaseStorage:
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend

    return JournalStorage(JournalFileBackend(str(storage_path)))


def open_study_signature(name: str, storage_path: Path) -> dict[str, Any] | None:
    """The search-space signature of study `name`, or None if there is no such study."""
    if not storage_path.exists():
        return None
    for summary in optuna.get_all_study_summaries(_storage(storage_path)):
        if summary.study_name == name:
            return summary.user_attrs.get("signature", {})
    return None


def open_study(name: str, storage_path: Path, spec: SearchSpec) -> optuna.Study:
    """Create the study, or load it if it exists with the same search space."""
    storage = _storage(storage_path)
    directions = (["maximize", "maximize", "minimize"] if spec.multi_objective else ["maximize"])
    found = open_study_signature(name, storage_path)
    if found is not None:
        if found != spec.signature():
            raise TenforgeError(f"study {name!r} exists in {storage_path} with another search "
                                f"space ({json.dumps(found)}); pick another --study name")
    sampler = optuna.samplers.TPESampler(seed=spec.seed)
    pruner = (optuna.pruners.NopPruner() if spec.multi_objective else
              optuna.pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=4))
    study = optuna.create_study(storage=storage, study_name=name, directions=directions,
                                sampler=sampler, pruner=pruner, load_if_exists=True)
    study.set_user_attr("signature", spec.signature())
    return study


def _owner() -> dict[str, Any]:
    return {"host": socket.gethostname(), "pid": os.getpid()}


def fail_interrupted_trials(study: optuna.Study) -> list[int]:
    """Mark FAIL (user attr interrupted) every RUNNING trial whose process, on this host, is
    gone: a killed search leaves its trial RUNNING in the journal forever, where it would
    neither count nor be retried. Trials of a live process, or of another host, are left
    alone (JournalStorage has no heartbeat to tell those apart). Returns their numbers."""
    failed = []
    for trial in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        owner = trial.user_attrs.get("owner") or {}
        if owner.get("host") != socket.gethostname() or pid_alive(int(owner.get("pid", -1))):
            continue
        study._storage.set_trial_user_attr(trial._trial_id, "interrupted", True)
        study._storage.set_trial_state_values(trial._trial_id, optuna.trial.TrialState.FAIL)
        failed.append(trial.number)
    return failed


def run_search(train: Dataset, valid: Dataset, spec: SearchSpec, study_name: str,
               storage_path: Path, on_trial: Callable[[dict[str, Any]], None] = lambda r: None,
               log: Callable[[str], None] = print) -> SearchResult:
    """Run (or continue) the study until it has `spec.trials` finished trials or the time
    budget is spent; `on_trial` gets every trial as a search_trials row."""
    if len(valid) == 0:
        raise TenforgeError("the validation split is empty; use more data or a larger "
                            "valid fraction")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = open_study(study_name, storage_path, spec)
    for stale in fail_interrupted_trials(study):
        log(f"trial {stale} of study {study_name} was interrupted (its process is gone): "
            "marked FAIL, and run again")
    for old in study.get_trials(deepcopy=False):  # a resumed study: make sure all are copied
        if old.state.is_finished():
            on_trial(trial_row(study, old))
    done = sum(t.state.is_finished() and not t.user_attrs.get("interrupted")
               for t in study.get_trials(deepcopy=False))
    remaining = max(spec.trials - done, 0)

    def objective(trial: optuna.Trial) -> float | tuple[float, float, float]:
        trial.set_user_attr("owner", _owner())  # lets a later run see that we were killed
        family = trial.suggest_categorical("family", list(spec.families))
        params = suggest_params(trial, family, spec.max_epochs)
        model = create_model(family, seed=spec.seed, **params)

        def report(step: int, value: float) -> None:
            if spec.multi_objective or family not in NEURAL:
                return
            trial.report(value, step)
            if trial.should_prune():
                raise optuna.TrialPruned(f"epoch {step}: validation peak1 {value:.3f}")

        info = model.fit(train, valid, report=report)
        metrics = ranking_metrics(valid, model.predict(valid))
        metrics["train_s"] = info["train_s"]
        trial.set_user_attr("metrics", {k: (None if isinstance(v, float) and math.isnan(v)
                                            else v) for k, v in metrics.items()})
        if spec.multi_objective:
            return metrics[spec.metric], metrics["pairwise"], info["train_s"]
        return metrics[spec.metric]

    def after_trial(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
        row = trial_row(study, trial)
        on_trial(row)
        finished = sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))
        value = "-" if trial.values is None else ", ".join(f"{v:.4f}" for v in trial.values)
        log(f"trial {trial.number} ({finished}/{spec.trials}) {trial.params.get('family')}: "
            f"{trial.state.name} {value}")

    if remaining:
        log(f"study {study_name}: {done} trials done, running up to {remaining} more "
            f"(budget {spec.time_budget_s:.0f} s)")
        study.optimize(objective, n_trials=remaining, timeout=spec.time_budget_s,
                       callbacks=[after_trial], catch=(Exception,), gc_after_trial=True)
    completed = [t for t in study.get_trials(deepcopy=False)
                 if t.state == optuna.trial.TrialState.COMPLETE]
    if not completed:
        raise TenforgeError(f"study {study_name} has no completed trial (all pruned or failed); "
                            "see the search_trials table for why")
    if spec.multi_objective:  # the Pareto trial with the best primary metric
        best = max(study.best_trials, key=lambda t: t.values[0])
    else:
        best = study.best_trial
    family = best.params["family"]
    params = {k.split(".", 1)[1]: v for k, v in best.params.items() if k.startswith(family + ".")}
    if family in NEURAL:
        params["epochs"] = spec.max_epochs
    return SearchResult(study_name, best.number, family, params, best.values[0],
                        [trial_row(study, t) for t in study.get_trials(deepcopy=False)])
