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


def test_other_families_join_the_bag_scaled_and_weighted_and_come_back_from_disk(tmp_path):
    bag = create_model("bagged", family="lgbm", members=2, member_params={"n_estimators": 20},
                       others=[{"family": "xgb", "params": {"n_estimators": 10}, "weight": 2}])
    bag.fit(TRAIN, VALID)
    assert [m.kind for m in bag.members] == ["lgbm", "lgbm", "xgb"]
    assert bag.members[2].config.n_estimators == 10 and bag.members[2].config.seed == 2
    expected = sum(w * m.predict(TRAIN) / s
                   for m, s, w in zip(bag.members, bag.scales, [1, 1, 2]))
    np.testing.assert_allclose(bag.predict(TRAIN), expected)
    assert bag.STRATEGIES == ("full",)  # what every member can do
    bag.save(tmp_path / "blend")
    np.testing.assert_array_equal(load_model(tmp_path / "blend").predict(VALID),
                                  bag.predict(VALID))


def test_the_spread_of_a_constant_model_scales_by_one():
    assert within_task_spread(np.zeros(6), np.array([0, 0, 0, 1, 1, 1])) == 1.0


@pytest.mark.parametrize("params, message", [
    ({"members": 0}, "at least 1 member"),
    ({"family": "bagged"}, "cannot be bags"),
    ({"member_params": {"seed": 3}}, "cannot set seed"),
    ({"others": [{"family": "xgb", "params": {"loss": "rank"}}]}, "cannot set loss"),
    ({"others": [{"family": "xgb", "weight": 0}]}, "weight 0; give a number above 0"),
    ({"others": [{"family": "xgb", "depth": 3}]}, "must be"),
    ({"others": [{"family": "bagged"}]}, "cannot be bags"),
    ({"others": [{"family": "xgb", "params": {"depth": 3}}]}, "xgb has no hyperparameter depth"),
    ({"member_params": {"depth": 3}}, "lgbm has no hyperparameter depth"),
    ({"family": "gbdt"}, "unknown model kind 'gbdt'"),
])
def test_a_bag_that_cannot_be_made_is_refused_in_one_line(params, message):
    with pytest.raises(TenforgeError, match=message):
        create_model("bagged", **params)
