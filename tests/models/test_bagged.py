"""A bag of one family's models: members differ by seed only, each is scaled by its spread
within a task, and the bag ranks by their sum; it fine-tunes and refuses what cannot be."""

import numpy as np
import pytest

from core.errors import TenforgeError
from models.bagged import within_task_spread
from models.registry import create_model, load_model
from tests.models.synthetic import synthetic_dataset

TRAIN = synthetic_dataset(seed=0)
VALID = synthetic_dataset(n_groups=4, seed=1)


def test_the_bag_is_the_scaled_sum_of_members_that_differ_by_seed_only():
    bag = create_model("bagged", family="xgb", members=3, seed=7,
                       member_params={"n_estimators": 20})
    bag.fit(TRAIN, VALID)
    assert [m.config.seed for m in bag.members] == [7, 8, 9]
    assert {m.config.n_estimators for m in bag.members} == {20}
    spreads = [within_task_spread(m.predict(VALID), VALID.group) for m in bag.members]
    np.testing.assert_allclose(bag.scales, spreads)
    expected = sum(m.predict(TRAIN) / s for m, s in zip(bag.members, spreads))
    np.testing.assert_allclose(bag.predict(TRAIN), expected)


def test_a_bag_fine_tunes_every_member_and_keeps_it_through_save_and_load(tmp_path):
    bag = create_model("bagged", family="lgbm", members=2, member_params={"n_estimators": 20})
    bag.fit(TRAIN)
    before = [m.booster.current_iteration() for m in bag.members]
    bag.fine_tune(VALID, strategy="full")
    assert all(m.booster.current_iteration() > b for m, b in zip(bag.members, before))
    bag.save(tmp_path / "bag")
    np.testing.assert_array_equal(load_model(tmp_path / "bag").predict(VALID), bag.predict(VALID))
    with pytest.raises(TenforgeError, match="cannot be fine-tuned with strategy 'head'"):
        bag.fine_tune(VALID, strategy="head")


def test_the_spread_of_a_constant_model_scales_by_one():
    assert within_task_spread(np.zeros(6), np.array([0, 0, 0, 1, 1, 1])) == 1.0


@pytest.mark.parametrize("params, message", [
    ({"members": 0}, "at least 1 member"),
    ({"family": "bagged"}, "cannot be bags"),
    ({"member_params": {"seed": 3}}, "cannot set seed"),
    ({"member_params": {"depth": 3}}, "lgbm has no hyperparameter depth"),
    ({"family": "gbdt"}, "unknown model kind 'gbdt'"),
])
def test_a_bag_that_cannot_be_made_is_refused_in_one_line(params, message):
    with pytest.raises(TenforgeError, match=message):
        create_model("bagged", **params)
