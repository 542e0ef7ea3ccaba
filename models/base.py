"""The CostModel contract every family implements.

A cost model scores candidates of a task: higher = predicted faster. Scores are only compared
within a task (one workload on one hardware), so any monotone scale is fine.

    model = create_model("xgb", loss="rank", seed=1)     # models.registry
    report = model.fit(train, valid, report=callback)      # -> dict of what happened
    scores = model.predict(test)                           # float64 [len(test)]
    model.save(path); same = load_model(path)              # config travels with the weights

`report(step, value)` is called with the validation top-1 peak score after each epoch / round
block when `valid` is given (Optuna prunes through it by raising). Artifacts are folders with
`model.json` (kind, config, format, and any lineage the caller adds) and the family's weights;
they are written once and never edited.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Callable, ClassVar

import numpy as np

from core.errors import TenforgeError
from models.dataset import Dataset
from models.metrics import peak_score, per_task

ARTIFACT_FORMAT = 1
META_FILE = "model.json"
Report = Callable[[int, float], None]
LOSSES = ("regression", "rank")


@dataclass(frozen=True)
class ModelConfig:
    """Fields every family has. Families subclass it with their hyperparameters."""

    loss: str = "rank"              # regression (RMSE on labels) or rank (pairwise in a task)
    seed: int = 0
    hardware_features: bool = True  # append the profile's hardware features to the input

    def __post_init__(self) -> None:
        if self.loss not in LOSSES:
            raise TenforgeError(f"unknown loss {self.loss!r}; choose one of {', '.join(LOSSES)}")


class CostModel(ABC):
    """A model that ranks a task's candidate schedules: `predict` scores, higher = faster.

    Users call the public methods; a family implements the four hooks below them.

    Public (implemented here, the same for every family):
        fit(train, valid=None, report=None) -> dict
            Train from scratch. `valid` (optional) drives early stopping; `report(step,
            value)` is called with the validation top-1 peak score after each epoch or round
            block (Optuna prunes by raising from it). Returns what happened (train_s,
            train_rows, and the family's own keys). Refuses an empty `train`.
        fine_tune(train, valid=None, strategy="full", report=None) -> dict
            Continue training a trained model in place with one of `STRATEGIES`
            (models.transfer adds "residual" for every family).
        predict(data) -> float64 array of len(data)
            Scores comparable within a task only. Refuses an untrained model.
        save(path, lineage=None) -> path; registry.load_model(path) -> CostModel
            A folder: model.json (kind, config, format, trained, lineage) and the weights.
            Never overwrites an artifact; an untrained model saves and loads too.

    Hooks (what a family implements):
        _fit(train, valid, report) -> dict      train; call `report` if given
        _predict(data) -> array                 scores for a trained model
        _save_weights(path) / _load_weights(path)
            weights in a safe format (JSON, safetensors-like raw arrays; never pickles)
        _fine_tune(train, valid, strategy, report) -> dict   only if STRATEGIES is not empty

    Class attributes: `kind` (the registry's name, models/registry.py), `config_class` (a
    frozen ModelConfig subclass: every hyperparameter, saved with the weights), and
    `STRATEGIES` (fine-tuning strategies the family supports). Determinism: the same config
    and seed give the same predictions. tests/models/test_contract.py holds every family to
    this contract.
    """

    kind: ClassVar[str]
    config_class: ClassVar[type[ModelConfig]] = ModelConfig
    STRATEGIES: ClassVar[tuple[str, ...]] = ()  # fine-tuning strategies this family supports

    def __init__(self, config: ModelConfig | None = None, **params: Any):
        if config is None:
            names = {f.name for f in fields(self.config_class)}
            unknown = sorted(set(params) - names)
            if unknown:
                raise TenforgeError(f"{self.kind} has no hyperparameter {', '.join(unknown)}; "
                                    f"it has: {', '.join(sorted(names))}")
            config = self.config_class(**params)
        self.config = config
        self.trained = False

    # -- the contract -------------------------------------------------------------------

    def fit(self, train: Dataset, valid: Dataset | None = None,
            report: Report | None = None) -> dict[str, Any]:
        """Train from scratch on `train`; `valid` drives early stopping and `report`."""
        if len(train) == 0:
            raise TenforgeError(f"cannot fit {self.kind}: the training set is empty")
        start = time.perf_counter()
        info = self._fit(train, valid if valid is not None and len(valid) else None, report)
        self.trained = True
        return {"kind": self.kind, "train_s": round(time.perf_counter() - start, 3),
                "train_rows": len(train), **info}

    def fine_tune(self, train: Dataset, valid: Dataset | None = None, strategy: str = "full",
                  report: Report | None = None) -> dict[str, Any]:
        """Continue training this (pre-trained) model on `train`, in place (models.transfer)."""
        if not self.trained:
            raise TenforgeError(f"cannot fine-tune an untrained {self.kind} model; pre-train it "
                                "first")
        if strategy not in self.STRATEGIES:
            supported = ", ".join(self.STRATEGIES) or "none"
            raise TenforgeError(f"{self.kind} cannot be fine-tuned with strategy {strategy!r} "
                                f"(it supports: {supported}; any model supports residual)")
        if len(train) == 0:
            raise TenforgeError(f"cannot fine-tune {self.kind}: no target samples")
        start = time.perf_counter()
        info = self._fine_tune(train, valid if valid is not None and len(valid) else None,
                               strategy, report)
        return {"kind": self.kind, "strategy": strategy,
                "train_s": round(time.perf_counter() - start, 3), "train_rows": len(train), **info}

    def _fine_tune(self, train: Dataset, valid: Dataset | None, strategy: str,
                   report: Report | None) -> dict:
        raise NotImplementedError

    @property
    def takes_traces(self) -> bool:
        """Whether its inputs include the trace summary, its tile block
        (models/trace_features.py) or the kernel estimate made from it
        (models/kernel_features.py): data for it must be loaded with DataSpec(traces=True), or
        made with traces."""
        return any(getattr(self.config, name, False)
                   for name in ("trace_features", "tile_features", "kernel_features"))

    @property
    def takes_asm(self) -> bool:
        """Whether its inputs include the assembly columns (models/asm_features.py): data for
        it must be loaded with DataSpec(asm=True). They cost a build per candidate, so such a
        model ranks stored candidates, never a search's (models/ms_adapter.py refuses it)."""
        return bool(getattr(self.config, "asm_features", False))

    def predict(self, data: Dataset) -> np.ndarray:
        if not self.trained:
            raise TenforgeError(f"{self.kind} model is not trained; fit it or load a trained one")
        if len(data) == 0:
            return np.zeros(0)
        return np.asarray(self._predict(data), dtype=np.float64).reshape(len(data))

    def save(self, path: str | Path, lineage: dict[str, Any] | None = None) -> Path:
        path = Path(path)
        if (path / META_FILE).exists():
            raise TenforgeError(f"{path} already holds a model; artifacts are never overwritten")
        path.mkdir(parents=True, exist_ok=True)
        if self.trained:
            self._save_weights(path)
        meta = {"format": ARTIFACT_FORMAT, "kind": self.kind, "config": asdict(self.config),
                "trained": self.trained, "lineage": lineage or {}}
        (path / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True, default=str))
        return path

    @classmethod
    def from_artifact(cls, path: Path, meta: dict[str, Any]) -> "CostModel":
        model = cls(cls.config_class(**meta["config"]))
        if meta["trained"]:
            model._load_weights(path)
            model.trained = True
        return model

    # -- what a family implements --------------------------------------------------------

    @abstractmethod
    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict: ...

    @abstractmethod
    def _predict(self, data: Dataset) -> np.ndarray: ...

    @abstractmethod
    def _save_weights(self, path: Path) -> None: ...

    @abstractmethod
    def _load_weights(self, path: Path) -> None: ...


def valid_peak1(model_predict: Callable[[Dataset], np.ndarray], valid: Dataset) -> float:
    """Top-1 peak score on `valid` (the default model-selection signal)."""
    return per_task(peak_score, valid.label, model_predict(valid), valid.group, k=1)


def hardware_inputs(data: Dataset) -> np.ndarray:
    """Per-candidate hardware features, log1p-scaled (bytes and counts span 1..1e8)."""
    return np.log1p(np.maximum(data.hardware_features, 0))[data.candidate_hardware()]
