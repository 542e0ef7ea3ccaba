"""A tenforge CostModel driving MetaSchedule's search, as a `PyCostModel`.

MetaSchedule asks `predict(context, candidates)` to rank the schedules its evolutionary search
made, and calls `update(context, candidates, results)` with measured ones. The adapter extracts
the same per-store features tenforge trains on (PerStoreFeature, 164-d, no workload part), scores
them with the model (higher = faster, as MetaSchedule expects; features of a program it has
ranked before come from models/feature_cache.py), and on updates collects the new
measurements per task; every `refit_every` new ones it fine-tunes a copy of the loaded model on
everything seen so far (strategy `full` where the family supports it, else `residual`), so
the search learns the target as it goes. The loaded artifact is never modified.

What MetaSchedule gets are not the model's raw scores but `search_scores`: its evolutionary
search clamps every score below 0 to 0 (PredictNormalizedScore), keeps the top of each
generation by score and picks parents in proportion to it, as for its own XGB's predicted
normalized throughput in (0, 1]. A ranking model's scores are unbounded: 81% of the Zen 5
BERT/mobilenet_v2/resnet18 seed rows scored <= 0 under the matrix's LightGBM (session 49), so
the search saw most of a poor population as equal zeros, with no order among them.

With `online` set, a refit also fits an online model from nothing on the search's own
measurements (an XGBoost regression of the normalized throughput, as MetaSchedule's XGBModel),
and a task's search scores blend the two: the pre-trained model's weight is online / (online +
n) after n measurements of the task. Why: on the Zen 5's BERT the learned search got within 10%
of XGB's final as soon as XGB did, then stalled 5% above it on the heaviest matmuls with as
many trials (docs/tuning-results.md, session 48): a prior trained on random samples ranks the
neighbourhood of a task's optimum worse than a model of that neighbourhood alone. With `blend`
"prequential", each task's weight is instead the one under which the blend would have ranked
the task's own measured batches best, each scored before the models learned it
(models/online_blend.py): one count did not suit every task (session 69, the Xeon). With
`mix`, a task's search scores keep that share of its measurements outside the innermost tile
factor it measured most (models/tile_mix.py).

    from models.ms_adapter import learned_cost_model
    cost_model = learned_cost_model("data/models/<id>", profile)
    ms.tune_tir(mod, target, work_dir, max_trials_global=64, cost_model=cost_model)
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import TenforgeError
from models.base import CostModel
from models.dataset import dataset_from_features
from models.feature_cache import DEFAULT_MAX_BYTES, FeatureCache
from models.online_blend import PrequentialBlend, count_share
from models.registry import create_model, load_model
from models.tile_mix import group_bests, lifted, steered, trace_group
from models.trace_features import DIM as TRACE_DIM
from models.trace_features import summarize, trace_matrix

# Measurements between refits (update() folds them in, a refit fine-tunes on all seen so far).
REFIT_EVERY = 64
# The online model (`online`): boosting rounds and step, fit from nothing at every refit
ONLINE_ROUNDS = 100
ONLINE_LEARNING_RATE = 0.2

# How a task's search scores weigh the online model: by count alone (n / (n + online) after n
# of the task's measurements), or as the task's own measured batches say (models/online_blend.py)
BLENDS = ("count", "prequential")

# Instructions whose decision (and, for SampleCategorical, its candidate values) the trace
# summary reads; every other instruction only counts.
_DECIDED = ("SamplePerfectTile", "SampleCategorical", "SampleComputeLocation")


def trace_summary(trace: Any) -> np.ndarray:
    """models/trace_features.py's summary of a MetaSchedule Trace object, read in place: the
    same vector as trace_vector(its JSON), without converting every instruction to JSON
    (that took as long as extracting the per-store features, per candidate ranked)."""
    insts = list(trace.insts)

    def steps():
        for inst in insts:
            kind = inst.kind.name
            if kind not in _DECIDED:
                yield kind, (), None
                continue
            decision = trace.get_decision(inst)
            if decision is None:
                yield kind, (), None
            elif kind == "SamplePerfectTile":
                yield kind, (), [int(_value(f)) for f in decision]
            elif kind == "SampleCategorical":
                yield kind, [[_value(v) for v in inst.attrs[0]]], int(_value(decision))
            else:
                yield kind, (), int(_value(decision))

    return summarize(steps(), len(insts))


def _value(x: Any) -> Any:
    """A TVM IntImm / FloatImm's Python value (plain numbers pass through)."""
    return getattr(x, "value", x)


class LearnedCostModel:
    """The logic, free of TVM types: features in, scores out; measurements folded in."""

    def __init__(self, model: CostModel, hardware_name: str, hardware_vector: np.ndarray,
                 refit_every: int = REFIT_EVERY, strategy: str | None = None,
                 online: int | None = None, blend: str = "count", mix: float | None = None,
                 steer: bool = False):
        if blend not in BLENDS:
            raise ValueError(f"blend {blend!r}: choose one of {BLENDS}")
        if model.takes_asm:
            raise TenforgeError(f"this {model.kind} model reads the assembly columns, a build "
                                "per candidate: it can rank stored candidates, not a search's "
                                "thousands; tune with a model trained without asm_features")
        self.base = model
        self.model = model
        self.hardware_name = hardware_name
        self.hardware_vector = np.asarray(hardware_vector, np.float32)
        self.refit_every = refit_every
        self.strategy = strategy or ("full" if "full" in model.STRATEGIES else "residual")
        self.seen: dict[str, tuple[list[np.ndarray], list[float], list[np.ndarray]]] = {}
        # models/trace_features.py: a model trained with the trace summary needs it here too
        self.takes_traces = model.takes_traces
        self.unfit = 0
        self.refits = 0
        self.predictions = 0
        self.online = online  # a task's measurements at which the online model weighs half
        self.online_model: CostModel | None = None
        self.blend = PrequentialBlend(online) if online and blend == "prequential" else None
        self.mix = mix  # the share kept outside a task's dominant tile group (models/tile_mix)
        self.steer = steer  # ... or outside its leading one, the quota steered by measurements
        self.groups_seen: dict[str, Counter] = {}  # task -> tile group -> programs measured
        self.group_bests: dict[str, dict[Any, float]] = {}  # task -> tile group -> fastest

    def predict(self, features: list[np.ndarray],
                traces: list[str] | np.ndarray | None = None) -> np.ndarray:
        """Scores (higher = faster). `traces`: each candidate's trace JSON, or their
        summaries already computed (n x trace_features.DIM); used if the model takes them."""
        self.predictions += len(features)
        if not features:
            return np.zeros(0)
        return self.model.predict(self._data(features, traces))

    def _data(self, features: list[np.ndarray], traces: list[str] | np.ndarray | None):
        return dataset_from_features(features, self.hardware_name, self.hardware_vector,
                                     traces=traces if self.takes_traces else None)

    def search_scores(self, features: list[np.ndarray],
                      traces: list[str] | np.ndarray | None = None,
                      task: str | None = None,
                      groups: list[Any] | None = None) -> np.ndarray:
        """What MetaSchedule's evolutionary search gets: positive, in the same order as
        predict's. A ranking model's score goes through the logistic function, the
        probability (in its own pairwise loss) that the candidate beats one scored 0: the same
        transform for every call, so generations ranked apart stay comparable. A regression
        model already predicts the normalized throughput MetaSchedule expects. With an online
        model fitted, `task`'s measurements so far shift the weight from one to the other.
        With `mix`, the candidates' tile `groups` (models/tile_mix.py) lift other groups'
        scores while `task` measured too few programs outside its dominant one; with `steer`
        too, the groups its measurements favour (tile_mix.steered)."""
        self.predictions += len(features)
        if not features:
            return np.zeros(0)
        data = self._data(features, traces)
        scores = self._prior_scores(data)
        measured = len(self.seen[task][1]) if task in self.seen else 0
        if self.online_model is not None and measured:
            share = (self.blend.share(task, measured) if self.blend is not None
                     else count_share(measured, self.online))
            scores = (1 - share) * scores + share * self._online_scores(data)
        if self.mix and task is not None and groups is not None:
            seen = self.groups_seen.get(task, Counter())
            scores = (steered(scores, groups, seen, self.group_bests.get(task, {}), self.mix)
                      if self.steer else lifted(scores, groups, seen, self.mix))
        return scores

    def _prior_scores(self, data) -> np.ndarray:
        """The pre-trained (and fine-tuned) model's search scores, positive (see above)."""
        scores = self.model.predict(data)
        if getattr(self.model.config, "loss", "regression") == "rank":
            scores = 1.0 / (1.0 + np.exp(-np.clip(scores, -50.0, 50.0)))
        return scores

    def _online_scores(self, data) -> np.ndarray:
        return np.clip(self.online_model.predict(data), 0, None)

    def update(self, task: str, features: list[np.ndarray], latencies: list[float],
               traces: list[str] | np.ndarray | None = None,
               groups: list[Any] | None = None) -> None:
        if self.blend is not None and self.online_model is not None and features:
            # scored before either model learns them: the task's evidence for its blend
            data = self._data(features, traces)
            self.blend.record(task, self._prior_scores(data), self._online_scores(data),
                              np.array(latencies))
        if groups is not None:  # failed ones too: the quota counts what the search spent
            self.groups_seen.setdefault(task, Counter()).update(groups)
            self.group_bests[task] = group_bests(groups, latencies, self.group_bests.get(task))
        feats, lats, seen_traces = self.seen.setdefault(task, ([], [], []))
        feats.extend(features)
        lats.extend(latencies)
        if self.takes_traces:  # kept as summaries: a refit stacks them
            seen_traces.extend(trace_matrix(traces) if isinstance(traces, list) else traces)
        self.unfit += len(features)
        if self.unfit >= self.refit_every:
            self.refit()

    def refit(self) -> None:
        """Fine-tune a fresh copy of the base model on every measurement seen so far."""
        import tempfile

        from models.transfer import fine_tune

        features, latencies, groups, traces = [], [], [], []
        for g, (feats, lats, seen_traces) in enumerate(self.seen.values()):
            features += feats
            latencies += lats
            groups += [g] * len(feats)
            traces += seen_traces
        data = dataset_from_features(features, self.hardware_name, self.hardware_vector,
                                     np.array(latencies), np.array(groups),
                                     traces=np.stack(traces) if self.takes_traces else None)
        if not np.isfinite(data.latency).any():
            return
        with tempfile.TemporaryDirectory() as tmp:
            self.base.save(Path(tmp) / "base")  # fine_tune works on a fresh copy of it
            self.model, _ = fine_tune(Path(tmp) / "base", self.strategy, data)
        if self.online:
            self.online_model = create_model(
                "xgb", loss="regression", n_estimators=ONLINE_ROUNDS,
                learning_rate=ONLINE_LEARNING_RATE, seed=self.refits)
            self.online_model.fit(data)
        self.unfit = 0
        self.refits += 1


def learned_cost_model(model_path: str | Path, profile: Any, refit_every: int = REFIT_EVERY,
                       strategy: str | None = None, cache_bytes: int = DEFAULT_MAX_BYTES,
                       online: int | None = None, blend: str = "count",
                       mix: float | None = None, steer: bool = False):
    """A MetaSchedule PyCostModel backed by the tenforge model saved at `model_path`, for
    hardware profile `profile` (its name and feature vector go with every candidate).
    `cache_bytes` bounds the features kept of candidates ranked before (0: extract always).
    `online`: blend in an online model (LearnedCostModel) at that many measurements a task,
    weighed by count or, `blend` "prequential", by the task's own batches (models/online_blend).
    `mix`: the share of a task's measurements kept outside its dominant tile group
    (models/tile_mix.py; None: the model's order alone); `steer`: the quota goes where the
    task's measurements say (tile_mix.steered) rather than by the model's order."""
    import tvm_ffi

    from core.tvm_env import load_tvm

    load_tvm(profile.target)
    from tvm.ir.utils import derived_object
    from tvm.s_tir.meta_schedule.cost_model import PyCostModel
    from tvm.s_tir.meta_schedule.feature_extractor import PerStoreFeature
    from tvm.s_tir.meta_schedule.utils import shash2hex

    logic = LearnedCostModel(load_model(model_path), profile.name,
                             np.array(profile.feature_vector(), np.float32), refit_every,
                             strategy, online, blend, mix, steer)
    extractor = PerStoreFeature(extract_workload=False)
    cache = FeatureCache(cache_bytes) if cache_bytes else None

    def features(context, candidates) -> list[np.ndarray]:
        def extract(indices: list[int]) -> list[np.ndarray]:
            chosen = [candidates[i] for i in indices]
            return [f.numpy().astype(np.float32)
                    for f in extractor.extract_from(context, chosen)]

        if cache is None:
            return extract(list(range(len(candidates))))
        # the scheduled module decides the features (one target per search); its hash is cheap
        keys = [tvm_ffi.structural_hash(c.sch.mod) for c in candidates]
        return cache.features(keys, extract)

    def traces(candidates) -> np.ndarray | None:
        if not logic.takes_traces:
            return None
        return np.stack([trace_summary(c.sch.trace) for c in candidates]) if candidates \
            else np.zeros((0, TRACE_DIM), np.float32)

    def groups(candidates) -> list[Any] | None:
        return [trace_group(c.sch.trace) for c in candidates] if logic.mix else None

    @derived_object
    class TenforgeCostModel(PyCostModel):
        def load(self, path: str) -> None:  # the model is loaded from its artifact already
            pass

        def save(self, path: str) -> None:  # artifacts are written by tenforge, not here
            pass

        def update(self, context, candidates, results) -> None:
            lat = [float(np.mean([float(s) for s in r.run_secs])) if r.run_secs and
                   r.error_msg is None else float("inf") for r in results]
            logic.update(shash2hex(context.mod), features(context, candidates), lat,
                         traces(candidates), groups(candidates))

        def predict(self, context, candidates) -> np.ndarray:
            # only a blend and a mix need the task
            task = shash2hex(context.mod) if logic.online or logic.mix else None
            return logic.search_scores(features(context, candidates), traces(candidates),
                                       task, groups(candidates)).astype("float64")

    cost_model = TenforgeCostModel()
    cost_model.logic = logic  # what it did (predictions, refits) stays inspectable
    cost_model.feature_cache = cache  # and how many extractions it saved (None: no cache)
    return cost_model
