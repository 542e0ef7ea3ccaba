"""The tree models' extra views of a candidate's per-store rows (TreeConfig.main_store,
store_max) and LightGBM's ranking settings (rank_truncation, gain_power)."""

from __future__ import annotations

import numpy as np
import pytest

from core.errors import TenforgeError
from models._trees import LGBMCostModel, TreeConfig, tree_inputs
from models.dataset import ARITHMETIC_COLUMNS, FEATURE_DIM, dataset_from_features
from models.registry import create_model
from tests.models.synthetic import synthetic_dataset


def _store(arithmetic: float, marker: float) -> np.ndarray:
    row = np.zeros(FEATURE_DIM, np.float32)
    row[:ARITHMETIC_COLUMNS] = arithmetic / ARITHMETIC_COLUMNS
    row[-1] = marker
    return row


def test_main_store_is_the_busiest_row_and_store_max_the_columnwise_maximum():
    candidates = [np.stack([_store(1, 10), _store(5, 20), _store(3, 30)]),
                  np.zeros((0, FEATURE_DIM), np.float32),  # no store at all
                  np.stack([_store(7, 40)])]
    data = dataset_from_features(candidates, "hw", np.zeros(4, np.float32))
    main = data.main_store()
    assert main[:, -1].tolist() == [20, 0, 40]  # the busiest store, whatever its position
    np.testing.assert_allclose(main[0], candidates[0][1])
    assert not main[1].any()
    biggest = data.store_max()
    assert biggest[:, -1].tolist() == [30, 0, 40]
    np.testing.assert_allclose(biggest[0], candidates[0].max(0))
    assert not biggest[1].any()


def test_each_block_is_appended_only_when_asked():
    data = synthetic_dataset(n_groups=3)
    plain = tree_inputs(data, with_hardware=False)
    both = tree_inputs(data, with_hardware=False, main_store=True, store_max=True)
    assert both.shape[1] == plain.shape[1] + 2 * FEATURE_DIM
    np.testing.assert_array_equal(both[:, :plain.shape[1]], plain)
    np.testing.assert_array_equal(both[:, -FEATURE_DIM:], data.store_max())


def test_the_ranking_settings_reach_lightgbm_and_their_defaults_are_its_own():
    model = create_model("lgbm", seed=0)
    params = model._params()
    assert params["lambdarank_truncation_level"] == 30  # LightGBM 4's default
    assert params["label_gain"] == list(range(LGBMCostModel.RELEVANCE_LEVELS + 1))
    steep = create_model("lgbm", seed=0, rank_truncation=5, gain_power=2.0)._params()
    assert steep["lambdarank_truncation_level"] == 5
    assert steep["label_gain"][15] == pytest.approx(7.5) and steep["label_gain"][30] == 30


def test_a_model_with_both_blocks_trains_and_ranks():
    data = synthetic_dataset(n_groups=6)
    model = create_model("lgbm", seed=0, n_estimators=30, main_store=True, store_max=True)
    model.fit(data)
    assert np.isfinite(model.predict(data)).all()


@pytest.mark.parametrize(("params", "message"), [
    ({"rank_truncation": 0}, "rank_truncation 0 is out of range"),
    ({"gain_power": 0.0}, "gain_power 0.0 is out of range"),
    ({"gain_power": 5.0}, "gain_power 5.0 is out of range")])
def test_bad_ranking_settings_are_refused(params, message):
    with pytest.raises(TenforgeError, match=message):
        TreeConfig(**params)


def test_task_centred_rows_average_zero_within_each_task_and_come_last():
    data = synthetic_dataset(n_groups=4)
    plain = tree_inputs(data, with_hardware=False)
    centred = tree_inputs(data, with_hardware=False, task_centred=True)
    block = centred[:, -FEATURE_DIM:]
    for g in range(data.n_groups):
        mine = data.group == g
        np.testing.assert_allclose(block[mine].mean(0), 0, atol=1e-4)
        np.testing.assert_allclose(block[mine], data.pack_sum()[mine]
                                   - data.pack_sum()[mine].mean(0), atol=1e-4)
    np.testing.assert_array_equal(centred[:, :plain.shape[1]], plain)
