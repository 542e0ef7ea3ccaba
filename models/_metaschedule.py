"""MetaSchedule's own XGBModel (tvm.s_tir.meta_schedule.cost_model.XGBModel) behind the CostModel
interface: the baseline a user gets without tenforge.

It is driven through its own `_train` / `_predict` (what `update` / `predict` call after
extracting features), so the booster, its pack-sum objective (per-store predictions summed per
candidate, squared error weighted by the label), its defaults (max_depth 10, eta 0.2, up to
10000 rounds, early stopping on the training set) and its labels (min cost in task / cost) are
MetaSchedule's. Not hardware-aware and not a ranking loss: `loss` and `hardware_features` are
recorded but the model ignores them, exactly like MetaSchedule does.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models.base import CostModel, ModelConfig, Report
from models.dataset import Dataset


@dataclass(frozen=True)
class MetaScheduleXGBConfig(ModelConfig):
    loss: str = "regression"
    hardware_features: bool = False
    num_threads: int = 2


def _xgb_model_class():
    from core.tvm_env import load_tvm

    load_tvm("llvm")
    from tvm.s_tir.meta_schedule.cost_model.xgb_model import XGBConfig, XGBModel

    return XGBModel, XGBConfig


class MetaScheduleXGBCostModel(CostModel):
    kind = "metaschedule_xgb"
    config_class = MetaScheduleXGBConfig

    def _model(self):
        xgb_model, xgb_config = _xgb_model_class()
        # verbose_eval: MetaSchedule logs every 25 rounds at INFO; keep our logs readable.
        return xgb_model(config=xgb_config(seed=self.config.seed,
                                           nthread=self.config.num_threads),
                         verbose_eval=10**9)

    @staticmethod
    def _xs(data: Dataset) -> list[np.ndarray]:
        rows = [data.candidate_features(i) for i in range(len(data))]
        # MetaSchedule drops candidates with no store rows; give them one zero row instead
        return [r if len(r) else np.zeros((1, data.store_features.shape[1]), np.float32)
                for r in rows]

    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict:
        self.ms = self._model()
        self.ms._train(xs=self._xs(train), ys=train.label.astype(np.float32))
        return {"rounds": int(self.ms.booster.num_boosted_rounds())}

    def _predict(self, data: Dataset) -> np.ndarray:
        return self.ms._predict(xs=self._xs(data))

    def _save_weights(self, path: Path) -> None:
        self.ms.booster.save_model(path / "booster.json")

    def _load_weights(self, path: Path) -> None:
        import xgboost as xgb

        self.ms = self._model()
        self.ms.booster = xgb.Booster()
        self.ms.booster.load_model(path / "booster.json")
