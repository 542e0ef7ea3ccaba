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


def test_the_bench_takes_chosen_feature_sets_and_recipes_beside_them():
    from bench.feature_sets import check_feature_sets, parse_recipe, variants

    name, params = parse_recipe('weights 0.25={"trace_features": true, "task_weight_power": 0.25}')
    assert (name, params) == ("weights 0.25", {"trace_features": True, "task_weight_power": 0.25})
    rows = {n: (family, p) for n, family, p in variants(
        ["bagged"], check_feature_sets(["per-store + trace + tiles"]), {name: params})}
    assert list(rows) == ["bagged per-store + trace + tiles", "bagged weights 0.25",
                          "metaschedule_xgb per-store"]
    assert rows["bagged weights 0.25"] == ("bagged", {"member_params": params})
    create_model("bagged", **rows["bagged weights 0.25"][1])  # the params build a model
    only = [n for n, _, _ in variants(["lgbm"], check_feature_sets(["none"]), {name: params})]
    assert only == ["lgbm weights 0.25", "metaschedule_xgb per-store"]  # none: the recipes alone


@pytest.mark.parametrize("text", ["weights", "weights=[1]", "={}", "w={not json"])
def test_a_malformed_recipe_is_refused_in_one_line(text):
    from bench.feature_sets import parse_recipe

    with pytest.raises(SystemExit, match="give NAME="):
        parse_recipe(text)


def test_an_unknown_feature_set_is_refused_with_the_names_there_are():
    from bench.feature_sets import check_feature_sets

    with pytest.raises(SystemExit, match="unknown 'tiles'; choose from 'per-store'"):
        check_feature_sets(["tiles"])


def test_the_per_profile_table_gives_each_variants_median():
    from bench.feature_sets import per_profile_table

    runs = {"a": [{"per_hardware": {"hw-1": 0.5, "hw-2": 0.7}},
                  {"per_hardware": {"hw-1": 0.7, "hw-2": 0.9}},
                  {"per_hardware": {"hw-1": 0.6}}]}
    table = per_profile_table(runs)
    assert "hw-1" in table and "0.600" in table and "0.800" in table
