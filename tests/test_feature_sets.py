"""The feature sets the benches compare (bench/_data.py, bench/feature_sets.py,
bench/leaderboard.py): each name builds the model it says, a bag gets them per member, and a
searched model's params are named back."""

import pytest

from bench._data import FEATURE_SETS, feature_set_name
from models.registry import create_model


@pytest.mark.parametrize("name", list(FEATURE_SETS))
def test_each_feature_set_names_itself_back_and_takes_traces_only_with_trace_columns(name):
    params = FEATURE_SETS[name]
    assert feature_set_name(params) == name
    assert create_model("lgbm", **params).takes_traces == (name != "per-store")


def test_the_feature_sets_bench_gives_a_bag_its_feature_set_per_member():
    from bench.feature_sets import variants

    rows = {name: (family, params) for name, family, params in variants(["lgbm", "bagged"])}
    assert rows["bagged per-store + trace + tiles"] == (
        "bagged", {"member_params": {"trace_features": True, "tile_features": True}})
    assert rows["lgbm per-store + trace + tiles"] == (
        "lgbm", {"trace_features": True, "tile_features": True})
    assert rows["metaschedule_xgb per-store"] == ("metaschedule_xgb", {})
    bag = create_model("bagged", **rows["bagged per-store + trace + tiles"][1])
    assert bag.takes_traces


def test_a_searched_tile_block_without_the_summary_is_named_for_what_it_is():
    assert feature_set_name({"tile_features": True}) == "per-store + tiles"
    assert feature_set_name({"trace_features": False, "max_depth": 8}) == "per-store"
