"""Gradient-boosted trees over pack-sum features (per-store features summed per candidate, as
TenSet's XGBoost baseline), with XGBoost or LightGBM, regression or ranking loss."""

from __future__ import annotations

import gzip
from dataclasses import dataclass, replace
from pathlib import Path

import lightgbm as lgb
import numpy as np
import xgboost as xgb

from core.errors import TenforgeError
from models.base import CostModel, ModelConfig, Report, hardware_inputs, valid_peak1
from models.dataset import Dataset
from models.kernel_features import kernel_columns
from models.trace_features import SUMMARY_DIM, tile_hardware_columns

LGBM_WEIGHTS = "lgbm.txt.gz"  # LightGBM's own text format, gzipped
LGBM_WEIGHTS_TEXT = "lgbm.txt"  # the same, uncompressed: models saved before 2026-11-29
THREADS = 2  # this machine kind has 2 cores; more threads only add contention


@dataclass(frozen=True)
class TreeConfig(ModelConfig):
    n_estimators: int = 400
    max_depth: int = 8
    learning_rate: float = 0.1
    min_child_weight: float = 1.0
    subsample: float = 0.9
    colsample: float = 0.9
    reg_lambda: float = 1.0
    early_stopping_rounds: int = 40
    trace_features: bool = False  # append the trace summary (models/trace_features.py)
    tile_features: bool = False  # and its tile block, with the columns it makes with hardware
    # And the micro-kernel estimate made from the tile block (models/kernel_features.py),
    # after every other block; it needs traces, as the tile block does
    kernel_features: bool = False
    # And what the compiled code does (models/asm_features.py), after every other block: the
    # data must carry Dataset.asm, which costs a build a row (tasks/compiled_code.py)
    asm_features: bool = False
    # Weight each task's rows by (its best latency x the most times a network runs it)^power,
    # scaled to a mean of 1 per profile: the ranking loss then leans toward the tasks that make
    # up a network's latency, and away from microsecond kernels whose candidates differ by
    # little more than measurement noise. 0: every task alike (docs/cost-models.md: 0.25 gave
    # +0.035 held-out peak@1, higher on 6 of 6 splits, and +0.008 median network top-1).
    task_weight_power: float = 0.0
    # The same when fine-tuning (a search's refits, onboarding); None: task_weight_power.
    # Weights follow a task's best latency, which on one profile's search-biased rows is the
    # search's own progress (docs/tuning-results.md, session 46: unweighted refits ranked a
    # search's later candidates +0.02 top-1 better; session 47: in the search itself no
    # faster, docs/tuning-results.md).
    fine_tune_task_weight_power: float | None = None
    # Beside the pack-sum: the busiest store's own row (Dataset.main_store), and the per-store
    # features' maximum over stores (docs/cost-models.md, session 46)
    main_store: bool = False
    store_max: bool = False
    # And the pack-sum less its task's mean (Dataset.task_centred): how a candidate differs
    # from the others it is ranked against. No gain on held-out networks (docs/cost-models.md,
    # session 47); in a search a predict call's candidates are the "task", so their scores
    # would move with what else is in the call: not for a search's model.
    task_centred: bool = False
    # LightGBM's lambdarank: how far down its own ranking a task's pairs count (LightGBM's
    # default, 30, is about a whole task of 32 random samples), and the NDCG gain of a label
    # level, level^gain_power (1: linear in best / latency, which is what the top-1 score
    # charges). A low truncation or a gain power above 1 spends the trees on the top picks; on
    # held-out networks both ranked worse (truncation 5 and 10, power 2: docs/cost-models.md).
    rank_truncation: int = 30
    gain_power: float = 1.0

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("task_weight_power", "fine_tune_task_weight_power"):
            power = getattr(self, name)
            if power is not None and not 0.0 <= power <= 2.0:
                raise TenforgeError(f"{name} {power} is out of range; give 0 (tasks alike) "
                                    "to 2")
        if self.rank_truncation < 1:
            raise TenforgeError(f"rank_truncation {self.rank_truncation} is out of range; "
                                "give the positions of a task's ranking that count, 1 or more")
        if not 0.0 < self.gain_power <= 4.0:
            raise TenforgeError(f"gain_power {self.gain_power} is out of range; give a power "
                                "above 0 and at most 4 (1: gains linear in the label)")


def tree_inputs(data: Dataset, with_hardware: bool, with_trace: bool = False,
                with_tiles: bool = False, main_store: bool = False,
                store_max: bool = False, task_centred: bool = False,
                kernel: bool = False, asm: bool = False) -> np.ndarray:
    pack_sum = data.pack_sum()
    parts = [pack_sum]
    if with_hardware:
        parts.append(hardware_inputs(data))
    if (with_trace or with_tiles or kernel) and data.trace is None:
        raise TenforgeError("this model takes trace features and the data has none: "
                            "load it with DataSpec(traces=True)")
    if with_trace:
        parts.append(data.trace[:, :SUMMARY_DIM])
    if with_tiles:
        parts.append(data.trace[:, SUMMARY_DIM:])
        parts.append(tile_hardware_columns(
            data.trace, data.hardware_features[data.candidate_hardware()]))
    if main_store:
        parts.append(data.main_store())
    if store_max:
        parts.append(data.store_max())
    if task_centred:
        parts.append(data.task_centred(pack_sum))
    if kernel:
        parts.append(kernel_columns(data.trace, data.hardware_features[data.candidate_hardware()]))
    if asm:
        if data.asm is None:
            raise TenforgeError("this model takes assembly features and the data has none: "
                                "set Dataset.asm from tasks.compiled_code.asm_features")
        parts.append(data.asm)
    return np.hstack(parts) if len(parts) > 1 else parts[0]


def columns_besides_hardware(config: TreeConfig, data: Dataset) -> int:
    """How many of `config`'s input columns are not hardware features, on `data`'s features:
    what the hardware width of a saved booster is found from. Counted by building the inputs
    without hardware for none of `data`'s rows, so it cannot drift from tree_inputs (a count
    kept beside it once missed a new block and refused every refit)."""
    no_rows = data.subset(np.arange(0))
    return config_inputs(no_rows, replace(config, hardware_features=False)).shape[1]


def config_inputs(data: Dataset, config: TreeConfig) -> np.ndarray:
    """tree_inputs as `config` asks for them."""
    return tree_inputs(data, config.hardware_features, config.trace_features,
                       config.tile_features, config.main_store, config.store_max,
                       config.task_centred, config.kernel_features, config.asm_features)


def task_weights(data: Dataset, power: float) -> np.ndarray:
    """Per group (task on a profile): (best valid latency x max occurrences in a network)^power,
    divided by its profile's mean; a group with nothing valid weighs 1 (its rows are all
    failures, labelled alike: nothing to rank)."""
    best = np.full(data.n_groups, np.inf)
    np.minimum.at(best, data.group, data.latency)  # a failed candidate's latency is inf
    runs = np.array([max(data.workload_networks.get(w, {}).values(), default=1)
                     for w in data.group_workload], np.float64)
    weights = np.ones(data.n_groups)
    valid = np.isfinite(best) & (best > 0)
    for hardware in np.unique(data.group_hardware[valid]):
        mine = valid & (data.group_hardware == hardware)
        importance = (best[mine] * runs[mine]) ** power
        weights[mine] = importance / importance.mean()
    return weights


def weight_power(config: TreeConfig, fine_tuning: bool) -> float:
    """The task-weight power of a fit (fine_tuning False) or of a fine-tune."""
    if fine_tuning and config.fine_tune_task_weight_power is not None:
        return config.fine_tune_task_weight_power
    return config.task_weight_power


def _row_weights(data: Dataset, power: float, order: np.ndarray) -> np.ndarray | None:
    """task_weights for each row in `order` (None when power 0 weighs tasks alike)."""
    if not power:
        return None
    return task_weights(data, power)[data.group[order]]


def _group_sorted(data: Dataset) -> np.ndarray:
    """Row order that makes every task contiguous (ranking objectives need query groups)."""
    return np.argsort(data.group, kind="stable")


class _BoostedCostModel(CostModel):
    """What XGBoost and LightGBM share: fitting is boosting from nothing; fine-tuning ("full"
    for trees) keeps every tree and boosts a quarter as many rounds more on the target data."""

    config_class = TreeConfig
    STRATEGIES = ("full",)

    def _fit(self, train: Dataset, valid: Dataset | None, report: Report | None) -> dict:
        return self._boost(train, valid, report, self.config.n_estimators, None,
                           weight_power(self.config, fine_tuning=False))

    def _fine_tune(self, train: Dataset, valid: Dataset | None, strategy: str,
                   report: Report | None) -> dict:
        return self._boost(train, valid, report, max(self.config.n_estimators // 4, 20),
                           self.booster, weight_power(self.config, fine_tuning=True))

    def _boost(self, train: Dataset, valid: Dataset | None, report: Report | None, rounds: int,
               start, power: float) -> dict:
        """Boost `rounds` more trees onto `start` (None: from nothing), each training task's
        rows weighted by task_weights(power)."""
        raise NotImplementedError


class XGBCostModel(_BoostedCostModel):
    kind = "xgb"

    def _dmatrix(self, data: Dataset, with_label: bool, power: float = 0.0):
        order = _group_sorted(data)
        x = config_inputs(data, self.config)[order]
        dm = xgb.DMatrix(x, label=data.label[order] if with_label else None, nthread=THREADS)
        weights = _row_weights(data, power, order) if with_label else None
        if with_label and self.config.loss == "rank":
            _, starts, counts = np.unique(data.group[order], return_index=True,
                                          return_counts=True)
            dm.set_group(counts)
            if weights is not None:  # XGBoost's ranking weighs whole groups, one value each
                dm.set_weight(weights[starts])
        elif weights is not None:
            dm.set_weight(weights)
        return dm, order

    def _params(self) -> dict:
        c = self.config
        return {"objective": "rank:pairwise" if c.loss == "rank" else "reg:squarederror",
                "max_depth": c.max_depth, "eta": c.learning_rate,
                "min_child_weight": c.min_child_weight, "subsample": c.subsample,
                "colsample_bytree": c.colsample, "lambda": c.reg_lambda, "seed": c.seed,
                "nthread": THREADS, "tree_method": "hist", "verbosity": 0}

    def _boost(self, train: Dataset, valid: Dataset | None, report: Report | None, rounds: int,
               start, power: float) -> dict:
        dtrain, _ = self._dmatrix(train, True, power)
        callbacks = []
        if valid is not None:
            dvalid, vorder = self._dmatrix(valid, True)
            callbacks.append(_PeakCallback(valid, dvalid, vorder, report,
                                           self.config.early_stopping_rounds))
        booster = xgb.train(self._params(), dtrain, num_boost_round=rounds, xgb_model=start,
                            callbacks=callbacks)
        if callbacks:
            cb = callbacks[0]
            self.booster = booster[:cb.best_round + 1]
            return {"rounds": cb.best_round + 1, "valid_peak1": cb.best}
        self.booster = booster
        return {"rounds": int(booster.num_boosted_rounds())}

    def _predict(self, data: Dataset) -> np.ndarray:
        x = config_inputs(data, self.config)
        return self.booster.predict(xgb.DMatrix(x, nthread=THREADS))

    def _save_weights(self, path: Path) -> None:
        self.booster.save_model(path / "xgb.json")

    def _load_weights(self, path: Path) -> None:
        self.booster = xgb.Booster()
        self.booster.load_model(path / "xgb.json")


class _PeakCallback(xgb.callback.TrainingCallback):
    """Every 10 rounds: validation top-1 peak score, report it, stop when it stalls."""

    def __init__(self, valid: Dataset, dvalid, vorder: np.ndarray, report: Report | None,
                 patience: int):
        self.valid, self.dvalid, self.vorder = valid, dvalid, vorder
        self.report, self.patience = report, patience
        self.best, self.best_round = -1.0, 0

    def before_training(self, model):
        self.best_round = model.num_boosted_rounds()  # continued boosting starts there
        return model

    def after_iteration(self, booster, epoch: int, evals_log) -> bool:
        if (epoch + 1) % 10:
            return False
        scores = np.empty(len(self.valid))
        scores[self.vorder] = booster.predict(self.dvalid)
        value = per_task_peak(self.valid, scores)
        if value > self.best + 1e-9:
            self.best, self.best_round = value, epoch
        if self.report is not None:
            self.report(epoch + 1, value)
        return epoch - self.best_round >= self.patience


def per_task_peak(valid: Dataset, scores: np.ndarray) -> float:
    return valid_peak1(lambda _: scores, valid)


class LGBMCostModel(_BoostedCostModel):
    kind = "lgbm"
    RELEVANCE_LEVELS = 30  # lambdarank needs integer relevance: label 0..1 -> 0..30

    def _dataset(self, data: Dataset, power: float):
        order = _group_sorted(data)
        x = config_inputs(data, self.config)[order]
        y = data.label[order]
        weights = _row_weights(data, power, order)  # lambdarank scales each row's gradient
        if self.config.loss == "rank":
            y = np.round(y * self.RELEVANCE_LEVELS).astype(np.int32)
            return lgb.Dataset(x, y, group=np.unique(data.group[order], return_counts=True)[1],
                               weight=weights, free_raw_data=False), order
        return lgb.Dataset(x, y, weight=weights, free_raw_data=False), order

    def _params(self) -> dict:
        c = self.config
        params = {"objective": "lambdarank" if c.loss == "rank" else "regression",
                  "max_depth": c.max_depth, "num_leaves": min(2 ** c.max_depth - 1, 255),
                  "learning_rate": c.learning_rate, "min_sum_hessian_in_leaf": c.min_child_weight,
                  "bagging_fraction": c.subsample, "bagging_freq": 1,
                  "feature_fraction": c.colsample, "lambda_l2": c.reg_lambda, "seed": c.seed,
                  "num_threads": THREADS, "verbosity": -1, "deterministic": True,
                  "force_row_wise": True}
        if c.loss == "rank":
            top = self.RELEVANCE_LEVELS
            params["label_gain"] = [top * (level / top) ** c.gain_power
                                    for level in range(top + 1)]
            params["lambdarank_truncation_level"] = c.rank_truncation
        return params

    def _boost(self, train: Dataset, valid: Dataset | None, report: Report | None, rounds: int,
               start, power: float) -> dict:
        dtrain, _ = self._dataset(train, power)
        first = start.current_iteration() if start is not None else 0
        state = {"best": -1.0, "best_round": first - 1}
        callbacks = []
        if valid is not None:
            xv = config_inputs(valid, self.config)

            def peak_callback(env):
                if (env.iteration + 1) % 10:
                    return
                value = per_task_peak(valid, env.model.predict(xv))
                if value > state["best"] + 1e-9:
                    state.update(best=value, best_round=env.iteration)
                if report is not None:
                    report(env.iteration + 1, value)
                if env.iteration - max(state["best_round"], first) >= \
                        self.config.early_stopping_rounds:
                    raise lgb.callback.EarlyStopException(state["best_round"], [])

            callbacks.append(peak_callback)
        self.booster = lgb.train(self._params(), dtrain, num_boost_round=rounds,
                                 init_model=start, callbacks=callbacks,
                                 keep_training_booster=True)
        if valid is not None:
            self.best_iteration = state["best_round"] + 1
            return {"rounds": self.best_iteration, "valid_peak1": state["best"]}
        self.best_iteration = self.booster.current_iteration()
        return {"rounds": self.best_iteration}

    def _predict(self, data: Dataset) -> np.ndarray:
        x = config_inputs(data, self.config)
        return self.booster.predict(x, num_iteration=self.best_iteration, num_threads=THREADS)

    def _save_weights(self, path: Path) -> None:
        # LightGBM's text trees compress 2.4x: a shipped bag of five is 8.7 MB as text, too
        # big to carry in git. mtime=0 keeps the same trees the same bytes.
        text = self.booster.model_to_string(num_iteration=self.best_iteration)
        (path / LGBM_WEIGHTS).write_bytes(gzip.compress(text.encode(), compresslevel=9, mtime=0))

    def _load_weights(self, path: Path) -> None:
        packed = path / LGBM_WEIGHTS
        if packed.exists():
            self.booster = lgb.Booster(model_str=gzip.decompress(packed.read_bytes()).decode())
        else:  # saved before the weights were compressed
            self.booster = lgb.Booster(model_file=str(path / LGBM_WEIGHTS_TEXT))
        self.best_iteration = self.booster.current_iteration()
