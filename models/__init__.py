"""Cost models, datasets and splits, metrics, transfer, the MetaSchedule adapter (no Prefect).

The public surface (as Optuna's packages have one): what scripts and the upper floors use.
Names load on first use, so `import models` stays cheap (torch and xgboost load only with the
families that need them).

    from models import DataSpec, load_dataset, make_split, SplitSpec, create_model, evaluate
    data = load_dataset("data/tenforge.duckdb", DataSpec(hardware=("cpu-...-1t",)))
    split = make_split(data, SplitSpec(kind="by_network", holdout=("resnet18",)))
    model = create_model("xgb", seed=0)
    model.fit(data.subset(split.train), data.subset(split.valid))
    print(evaluate(model, data.subset(split.test)))

Underscore modules (`_trees`, `_neural`, `_metaschedule`) hold the families; reach them
through the registry's kind strings (`KINDS`).
"""

from __future__ import annotations

import importlib
from typing import Any

_SURFACE = {
    "CostModel": "models.base", "ModelConfig": "models.base",
    "KINDS": "models.registry", "create_model": "models.registry",
    "load_model": "models.registry", "model_class": "models.registry",
    "DataSpec": "models.dataset", "Dataset": "models.dataset", "load_dataset": "models.dataset",
    "check_dataset": "models.dataset",
    "SPLITS": "models.splits", "SplitSpec": "models.splits", "make_split": "models.splits",
    "RANKING_METRICS": "models.evaluate", "evaluate": "models.evaluate",
    "ranking_metrics": "models.evaluate",
    "STRATEGIES": "models.transfer", "fine_tune": "models.transfer",
    "learned_cost_model": "models.ms_adapter",
}
__all__ = sorted(_SURFACE)


def __getattr__(name: str) -> Any:
    if name not in _SURFACE:
        raise AttributeError(f"module 'models' has no attribute {name!r}")
    return getattr(importlib.import_module(_SURFACE[name]), name)
