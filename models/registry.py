"""Kind string -> cost model class, imported lazily (torch and xgboost take seconds to import).

An explicit table, not registration at import time: what exists is readable here.
"""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

from core.errors import TenforgeError
from models.base import ARTIFACT_FORMAT, META_FILE, CostModel

KINDS: dict[str, str] = {
    "xgb": "models._trees:XGBCostModel",
    "lgbm": "models._trees:LGBMCostModel",
    "mlp": "models._neural:MLPCostModel",
    "attention": "models._neural:AttentionCostModel",
    "bilstm_attention": "models._neural:BiLSTMAttentionCostModel",
    "metaschedule_xgb": "models._metaschedule:MetaScheduleXGBCostModel",
    "residual": "models.transfer:ResidualCostModel",  # made by transfer, not searched
    "bagged": "models.bagged:BaggedCostModel",  # several seeds of one family, not searched
}
# The families the Optuna search tries (models/search.py): the searchable subset of KINDS.
FAMILIES = ("xgb", "lgbm", "mlp", "attention", "bilstm_attention")


def model_class(kind: str) -> type[CostModel]:
    if kind not in KINDS:
        raise TenforgeError(f"unknown model kind {kind!r}; choose one of {', '.join(KINDS)}")
    module, name = KINDS[kind].split(":")
    return getattr(importlib.import_module(module), name)


def create_model(kind: str, **params: Any) -> CostModel:
    """A new, untrained model of `kind` with hyperparameters `params` (others at defaults)."""
    return model_class(kind)(**params)


def load_model(path: str | Path) -> CostModel:
    """The model saved in folder `path`, refusing anything that is not a tenforge artifact."""
    path = Path(path)
    meta_path = path / META_FILE
    if not meta_path.is_file():
        raise TenforgeError(f"{path} is not a tenforge model artifact (no {META_FILE})")
    try:
        meta = json.loads(meta_path.read_text())
        kind, _ = meta["kind"], meta["config"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise TenforgeError(f"{meta_path} is corrupted ({type(exc).__name__}: {exc}); "
                            "retrain or restore the artifact") from None
    if meta.get("format") != ARTIFACT_FORMAT:
        raise TenforgeError(f"{path}: artifact format {meta.get('format')!r}, this tenforge "
                            f"reads {ARTIFACT_FORMAT}")
    cls = model_class(kind)
    try:
        return cls.from_artifact(path, meta)
    except TenforgeError:
        raise
    except Exception as exc:  # a damaged weights file: say which artifact, not a deep trace
        raise TenforgeError(f"cannot load {kind} model from {path}: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
