"""The feature sets the benches compare (bench/_data.py, bench/feature_sets.py,
bench/leaderboard.py): each name builds the model it says, a bag gets them per member, and a
searched model's params are named back."""

import json

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


def test_task_fractions_keep_nested_shares_of_the_training_tasks_with_all_their_rows():
    import numpy as np

    from bench.feature_sets import task_subsets
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset(n_groups=16, per_group=4)
    train = data.subset(np.flatnonzero(data.group < 12))  # groups 12-15: someone else's rows
    parts = dict(task_subsets(train, seed=3, fractions=[0.25, 0.5, 1.0]))
    assert parts[1.0] is train
    kept = {f: set(part.group_workload[part.group]) for f, part in parts.items()}
    assert [len(kept[f]) for f in (0.25, 0.5, 1.0)] == [3, 6, 12]
    assert kept[0.25] < kept[0.5] < kept[1.0]  # nested: each share inside the next
    for f, part in parts.items():  # a chosen task keeps every row it had in train
        assert len(part) == 4 * len(kept[f])
    again = dict(task_subsets(train, seed=3, fractions=[0.25]))
    assert set(again[0.25].group_workload[again[0.25].group]) == kept[0.25]  # seeded


@pytest.mark.parametrize("text", ["0", "1.5", "a,b", ""])
def test_task_fractions_outside_zero_to_one_are_refused_in_one_line(text):
    from bench.feature_sets import parse_fractions

    with pytest.raises(SystemExit, match=r"in \(0, 1\]"):
        parse_fractions(text)


def test_row_fractions_keep_every_task_with_a_seeded_share_of_its_rows():
    import numpy as np

    from bench.feature_sets import row_subsets, training_parts
    from tests.models.synthetic import synthetic_dataset

    train = synthetic_dataset(n_groups=6, per_group=8)
    (fraction, half), = row_subsets(train, seed=1, fractions=[0.5, 1.0])  # 1: train itself
    assert fraction == 0.5 and len(half) == 6 * 4
    assert np.array_equal(np.bincount(half.group, minlength=6), [4] * 6)  # every task, half
    assert set(half.candidate_id) < set(train.candidate_id)
    (_, tiny), = row_subsets(train, seed=1, fractions=[0.01])
    assert np.array_equal(np.bincount(tiny.group, minlength=6), [2] * 6)  # 2 rank, at least
    names = [name for name, _ in training_parts(train, 1, [0.5, 1.0], [0.5])]
    assert names == [" @0.5 tasks", " @1 tasks", " @0.5 rows"]
    assert [name for name, _ in training_parts(train, 1, [1.0], [])] == [""]


def test_scoring_on_some_profiles_keeps_their_rows_and_refuses_unknown_ones():
    from bench._data import scored_rows
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset(n_groups=6, per_group=3, hardware=("hw-a", "hw-b"))
    assert scored_rows(data, None) is data
    only_b = scored_rows(data, ["hw-b"])
    assert len(only_b) == 9 and set(only_b.candidate_hardware()) == {1}
    with pytest.raises(SystemExit, match="hw-c not in the data; choose from hw-a, hw-b"):
        scored_rows(data, ["hw-c"])


def test_extra_shard_folders_are_checked_before_loading_and_named_from_dataset(tmp_path):
    """--extra (bench/feature_sets.py, bench/ship_model.py): data beyond the seed's cap loads
    beside the seed; a wrong folder fails in one line, and a --db store is never written."""
    from bench._data import extra_folders, shard_provenance, store_or_seed
    from storage.seed import SEED_DIR
    from tasks.shipped import lineage_shard_path

    with pytest.raises(SystemExit, match=r"--extra .*nowhere: .*is not a folder"):
        extra_folders(str(tmp_path / "nowhere"))
    with pytest.raises(SystemExit, match=r"--extra .*: no shards in it"):
        extra_folders(str(tmp_path))
    with pytest.raises(SystemExit, match=r"with --db, load them into .*tenforge ingest"):
        store_or_seed(str(tmp_path / "mine.duckdb"), "test", [tmp_path])
    assert not (tmp_path / "mine.duckdb").exists()

    extra = sorted(p for p in (SEED_DIR.parent / "extra").iterdir() if p.is_dir())[0]
    assert extra_folders(f"{extra}, ") == [extra]
    named = shard_provenance([SEED_DIR, extra])
    assert named[0]["shard"].startswith("seed/cpu-") or named[0]["shard"].startswith("seed/gpu-")
    assert any(s["shard"].startswith(f"extra/{extra.name}/") for s in named)
    for shard in named:  # a lineage's names lead back to the very files
        manifest = lineage_shard_path(shard["shard"])
        assert json.loads(manifest.read_text())["files"] == shard["files"]
    # a model shipped before named its shards from dataset/seed/
    old = named[0]["shard"].removeprefix("seed/")
    assert lineage_shard_path(old) == lineage_shard_path(named[0]["shard"])
    device = sorted((SEED_DIR.parent / "device").rglob("*.json"))[0]  # a GPU lease's shards
    assert lineage_shard_path(str(device.relative_to(SEED_DIR.parent))) == device


def test_the_asm_set_names_itself_back_and_the_leaderboard_adds_it_for_trees_where_stored():
    from bench._data import ASM_FEATURE_SETS
    from bench.leaderboard import variants

    for name, params in ASM_FEATURE_SETS.items():
        assert feature_set_name(params) == name
        model = create_model("lgbm", **params)
        assert model.takes_asm and model.takes_traces
    assert feature_set_name({"tile_features": True, "asm_features": True}) == \
        "per-store + tiles + asm"
    plain = variants(["lgbm", "mlp"], trials=0)
    assert not any("asm" in features for _, features, _ in plain)
    with_asm = variants(["lgbm", "mlp", "bagged"], trials=0, asm=True)
    assert [(f, s) for f, s, _ in with_asm if "asm" in s] == [
        ("lgbm", "per-store + trace + tiles + asm")]  # trees only: the others cannot take it
