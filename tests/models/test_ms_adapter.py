"""A tenforge model as MetaSchedule's cost model: the logic on synthetic features, and a real
tune_tir run driven by a model trained on the seed."""

import json
import subprocess
import sys

import numpy as np
import pytest

from models.dataset import DataSpec, load_dataset
from models.feature_cache import FeatureCache
from models.ms_adapter import LearnedCostModel
from models.online_blend import WEIGHTS
from models.registry import create_model
from tests.conftest import ROOT
from tests.models.synthetic import synthetic_dataset

DATA = synthetic_dataset()


def _features(data, index):
    return [data.candidate_features(i) for i in index]


def test_predict_and_refit_on_updates():
    model = create_model("xgb", n_estimators=30)
    model.fit(DATA)
    logic = LearnedCostModel(model, "hw-a", DATA.hardware_features[0], refit_every=20)
    before = logic.predict(_features(DATA, range(40)))
    assert before.shape == (40,) and np.isfinite(before).all()
    logic.update("task-1", _features(DATA, range(10)), list(DATA.latency[:10]))
    assert logic.refits == 0  # not enough new measurements yet
    logic.update("task-2", _features(DATA, range(24, 44)), list(DATA.latency[24:44]))
    assert logic.refits == 1 and logic.unfit == 0
    assert logic.model is not model  # the loaded model itself is never changed
    np.testing.assert_array_equal(model.predict(DATA.subset(np.arange(40))), before)
    assert not np.allclose(logic.predict(_features(DATA, range(40))), before)
    assert logic.predict([]).shape == (0,)


def test_search_scores_are_positive_and_keep_the_ranking_order():
    """MetaSchedule clamps scores below 0 and samples parents in proportion to them: a ranking
    model's scores reach it positive, in the same order, the same whatever else is ranked."""
    model = create_model("xgb", n_estimators=30, loss="rank")
    model.fit(DATA)
    logic = LearnedCostModel(model, "hw-a", DATA.hardware_features[0])
    feats = _features(DATA, range(60))
    raw, searched = logic.predict(feats), logic.search_scores(feats)
    assert (raw <= 0).any()  # what the clamp would have flattened
    assert (searched > 0).all() and (searched < 1).all()
    np.testing.assert_array_equal(np.argsort(raw, kind="stable"),
                                  np.argsort(searched, kind="stable"))
    np.testing.assert_allclose(logic.search_scores(feats[:7]), searched[:7])
    regression = create_model("xgb", n_estimators=30, loss="regression")
    regression.fit(DATA)
    logic = LearnedCostModel(regression, "hw-a", DATA.hardware_features[0])
    np.testing.assert_array_equal(logic.search_scores(feats), logic.predict(feats))


def test_online_model_takes_over_a_task_as_its_measurements_grow():
    model = create_model("xgb", n_estimators=30, loss="rank")
    model.fit(DATA)
    prior = LearnedCostModel(model, "hw-a", DATA.hardware_features[0], refit_every=20)
    blended = LearnedCostModel(model, "hw-a", DATA.hardware_features[0], refit_every=20,
                               online=10)
    feats = _features(DATA, range(60))
    for logic in (prior, blended):
        logic.update("task-1", _features(DATA, range(30)), list(DATA.latency[:30]))
    assert blended.online_model is not None and prior.online_model is None
    # the same refit underneath: without measurements of the task the scores are the prior's
    np.testing.assert_allclose(blended.search_scores(feats, task="unseen"),
                               prior.search_scores(feats, task="unseen"))
    # 30 measurements of task-1 against online=10: three quarters the online model's
    online = np.clip(blended.online_model.predict(blended._data(feats, None)), 0, None)
    np.testing.assert_allclose(blended.search_scores(feats, task="task-1"),
                               0.25 * prior.search_scores(feats) + 0.75 * online)


def test_a_prequential_blend_weighs_each_task_by_its_own_scored_batches():
    model = create_model("xgb", n_estimators=30, loss="rank")
    model.fit(DATA)
    logic = LearnedCostModel(model, "hw-a", DATA.hardware_features[0], refit_every=20,
                             online=64, blend="prequential")
    logic.update("task-1", _features(DATA, range(30)), list(DATA.latency[:30]))
    assert logic.online_model is not None and not logic.blend.batches  # nothing scored it yet
    for start in (30, 40):  # scored by both models before they learn them
        logic.update("task-1", _features(DATA, range(start, start + 10)),
                     list(DATA.latency[start:start + 10]))
    assert len(logic.blend.batches["task-1"]) == 2
    feats = _features(DATA, range(60))
    share = logic.blend.share("task-1", 50)
    assert share in WEIGHTS
    data = logic._data(feats, None)
    np.testing.assert_allclose(logic.search_scores(feats, task="task-1"),
                               (1 - share) * logic._prior_scores(data)
                               + share * logic._online_scores(data))
    with pytest.raises(ValueError, match="prequential"):
        LearnedCostModel(model, "hw-a", DATA.hardware_features[0], online=64, blend="rank")


@pytest.mark.slow
def test_tune_tir_with_a_learned_model(seed_store, tmp_path):
    hardware = ("cpu-znver3-sse42-1t",)
    model = create_model("xgb", n_estimators=50)
    model.fit(load_dataset(seed_store, DataSpec(hardware=hardware)))
    model.save(tmp_path / "model")
    result = subprocess.run([sys.executable, str(ROOT / "tests/models/tune_with_learned_model.py"),
                             str(tmp_path / "work"), str(tmp_path / "model"), "8", "4", "16",
                             "0.25", "steer"],
                            capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    done = json.loads(result.stdout.strip().splitlines()[-1])
    assert done["records"] == 8          # every trial measured and recorded
    assert done["predictions"] >= 8      # the search ranked its candidates with our model
    assert done["refits"] >= 1            # and folded the measurements in
    assert done["online"]                 # with an online model beside it (online=16)
    # and a steered tile mix (0.25) that read each measured program's innermost tile factor: 64x64
    # splits into factors of 64, each a power of two
    assert sum(done["groups"].values()) == 8
    assert all(int(g) in (1, 2, 4, 8, 16, 32, 64) for g in done["groups"])
    # steered (tile_mix.steered): each measured group's fastest program kept, in seconds
    assert set(done["bests"]) <= set(done["groups"]) and done["bests"]
    assert all(0 < t < 1 for t in done["bests"].values())
    # what it measured it had ranked: the update's features came from the cache
    assert done["feature_hits"] >= done["records"]


def test_feature_cache_extracts_each_program_once():
    extracted: list[list[int]] = []

    def extract(indices):
        extracted.append(list(indices))
        return [np.full((2, 3), keys[i], np.float32) for i in indices]

    cache = FeatureCache(max_bytes=10 * 24)  # ten entries of 2x3 float32
    keys = [5, 7, 5, 9]
    first = cache.features(keys, extract)
    assert extracted == [[0, 1, 3]]  # the repeated 5 once, at its first index
    assert [int(f[0, 0]) for f in first] == keys
    keys = [9, 11, 7]
    second = cache.features(keys, extract)
    assert extracted[-1] == [1]  # only 11 is new
    assert [int(f[0, 0]) for f in second] == keys
    assert (cache.hits, cache.misses) == (3, 4)


def test_feature_cache_evicts_the_least_recently_used_within_its_bytes():
    def extract(indices):
        return [np.zeros((1, 4), np.float32) for _ in indices]  # 16 bytes each

    cache = FeatureCache(max_bytes=48)
    cache.features([1, 2, 3], extract)
    cache.features([1], extract)          # 1 is now the most recent
    cache.features([4], extract)          # evicts 2, the least recent
    assert len(cache) == 3 and cache.bytes == 48
    misses = cache.misses
    cache.features([1, 3, 4], extract)
    assert cache.misses == misses         # all still cached
    cache.features([2], extract)
    assert cache.misses == misses + 1     # 2 was gone
    assert FeatureCache(max_bytes=0).features([1, 1], extract)[0].shape == (1, 4)


def test_feature_cache_refuses_a_short_extraction():
    with pytest.raises(ValueError, match="returned 1 feature arrays for 2"):
        FeatureCache().features([1, 2], lambda indices: [np.zeros(1)])
