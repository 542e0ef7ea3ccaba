"""Transfer a pre-trained cost model to a target hardware profile from a few measurements.

Strategies (`STRATEGIES`):
- full: continue training every weight on the target samples (neural: 0.3x learning rate;
  trees: more boosting rounds on top of the pre-trained trees).
- head: train only the output head of a neural model; the encoder stays frozen.
- residual: TenSet's "plus" mode, for any family: the pre-trained model is frozen; its score is
  calibrated to the target labels (least squares) and a small XGBoost model learns what is left.
- multi_head: MTL-TLP: a model pre-trained with one head per hardware gets a new head for the
  target (the mean of the others to start), trained with the shared encoder at 0.1x rate.

`fine_tune` never changes the parent artifact: it loads a fresh copy and returns a new model,
which the caller saves as a new artifact pointing at its parent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from models.base import CostModel, ModelConfig, Report
from models.dataset import Dataset
from models.registry import load_model

STRATEGIES = ("full", "head", "residual", "multi_head")


@dataclass(frozen=True)
class ResidualConfig(ModelConfig):
    loss: str = "regression"
    n_estimators: int = 150
    max_depth: int = 6
    learning_rate: float = 0.1


class ResidualCostModel(CostModel):
    """A frozen base model plus a calibrated residual (score = a * base + b + residual)."""

    kind = "residual"
    config_class = ResidualConfig

    def __init__(self, config: ModelConfig | None = None, base: CostModel | None = None,
                 **params: Any):
        super().__init__(config, **params)
        self.base = base

    def save(self, path: str | Path, lineage: dict[str, Any] | None = None) -> Path:
        out = super().save(path, lineage)
        if not self.trained and self.base is not None:  # keep the base: it can still be fitted
            self.base.save(out / "base")
        return out

    @classmethod
    def from_artifact(cls, path: Path, meta: dict[str, Any]) -> "CostModel":
        model = super().from_artifact(path, meta)
        if not model.trained and (path / "base").is_dir():
            model.base = load_model(path / "base")
        return model

    @property
    def takes_traces(self) -> bool:  # the residual itself reads per-store features only
        return self.base is not None and self.base.takes_traces

    @property
    def takes_asm(self) -> bool:
        return self.base is not None and self.base.takes_asm

    def _residual_model(self) -> CostModel:
        from models._trees import XGBCostModel

        c = self.config
        return XGBCostModel(loss="regression", seed=c.seed, n_estimators=c.n_estimators,
                            max_depth=c.max_depth, learning_rate=c.learning_rate,
                            hardware_features=False)

    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict:
        if self.base is None or not self.base.trained:
            raise TenforgeError("a residual model needs a trained base model; use "
                                "models.transfer.fine_tune(parent, 'residual', ...)")
        base = self.base.predict(train)
        design = np.stack([base, np.ones_like(base)], axis=1)
        (self.scale, self.offset), *_ = np.linalg.lstsq(design, train.label, rcond=None)
        calibrated = self.scale * base + self.offset
        residual_data = _with_labels(train, train.label - calibrated)
        self.residual = self._residual_model()
        info = self.residual.fit(residual_data)
        return {"scale": float(self.scale), "offset": float(self.offset),
                "residual_rounds": info["rounds"]}

    def _predict(self, data: Dataset) -> np.ndarray:
        return (self.scale * self.base.predict(data) + self.offset
                + self.residual.predict(data))

    def _save_weights(self, path: Path) -> None:
        self.base.save(path / "base")
        self.residual.save(path / "residual")
        (path / "calibration.json").write_text(json.dumps({"scale": float(self.scale),
                                                           "offset": float(self.offset)}))

    def _load_weights(self, path: Path) -> None:
        self.base = load_model(path / "base")
        self.residual = load_model(path / "residual")
        calibration = json.loads((path / "calibration.json").read_text())
        self.scale, self.offset = calibration["scale"], calibration["offset"]


def _with_labels(data: Dataset, labels: np.ndarray) -> Dataset:
    from dataclasses import replace

    return replace(data, label=labels.astype(np.float32))


def uses_hw_features(model: CostModel) -> bool:
    return bool(getattr(model.config, "hardware_features", False))


def check_transferable(parent: CostModel, target: Dataset) -> None:
    """Refuse a target whose hardware feature vector the parent was not built for."""
    hw_dim = getattr(parent, "hw_dim", None)
    booster = getattr(parent, "booster", None)
    if hw_dim is None and booster is not None and uses_hw_features(parent):
        total = booster.num_features() if hasattr(booster, "num_features") else \
            booster.num_feature()
        from models._trees import columns_besides_hardware

        hw_dim = total - columns_besides_hardware(parent.config, target)
    uses_hw = getattr(parent.config, "hardware_features", False)
    if uses_hw and hw_dim not in (None, 0) and target.hardware_features.shape[1] != hw_dim:
        raise TenforgeError(f"the parent {parent.kind} model was built for {hw_dim} hardware "
                            f"features; profile {', '.join(target.hardware_names)} has "
                            f"{target.hardware_features.shape[1]}")


def check_strategy_name(strategy: str) -> None:
    """Refuse a strategy that does not exist (fine_tune, and the transfer and onboard
    requests before any work)."""
    if strategy not in STRATEGIES:
        raise TenforgeError(f"unknown transfer strategy {strategy!r}; choose one of "
                            f"{', '.join(STRATEGIES)}")


def fine_tune(parent_path: str | Path, strategy: str, train: Dataset,
              valid: Dataset | None = None, seed: int = 0) -> tuple[CostModel, dict[str, Any]]:
    """A new model: the parent at `parent_path` adapted to `train` with `strategy`."""
    check_strategy_name(strategy)
    parent = load_model(parent_path)
    if not parent.trained:
        raise TenforgeError(f"the parent model at {parent_path} is not trained")
    check_transferable(parent, train)
    if strategy == "residual":
        model = ResidualCostModel(ResidualConfig(seed=seed), base=parent)
        return model, model.fit(train, valid)
    return parent, parent.fine_tune(train, valid, strategy)
