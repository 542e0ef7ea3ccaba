"""Transfer strategies on synthetic data: each makes a new model, leaves the parent artifact
alone, and refuses what it cannot do in one line."""

from dataclasses import replace

import numpy as np
import pytest
import torch

from core.errors import TenforgeError
from models.registry import create_model, load_model
from models.transfer import STRATEGIES, fine_tune
from tests.models.synthetic import synthetic_dataset

DATA = synthetic_dataset(n_groups=8, per_group=24)
SOURCE = DATA.subset(np.flatnonzero(DATA.candidate_hardware() == 0))  # hw-a
TARGET = DATA.subset(np.flatnonzero(DATA.candidate_hardware() == 1))  # hw-b
NEURAL = {"epochs": 6, "hidden": 32, "batch_size": 48}


@pytest.fixture(scope="module")
def parents(tmp_path_factory):
    root = tmp_path_factory.mktemp("parents")
    made = {}
    for name, kind, params in [("mlp", "mlp", NEURAL),
                               ("mlp_heads", "mlp", {**NEURAL, "head_per_hardware": True}),
                               ("xgb", "xgb", {"n_estimators": 40}),
                               ("lgbm", "lgbm", {"n_estimators": 40}),
                               ("lgbm_stores", "lgbm", {"n_estimators": 40, "main_store": True,
                                                        "store_max": True}),
                               ("ms", "metaschedule_xgb", {})]:
        model = create_model(kind, **params)
        model.fit(SOURCE)
        made[name] = model.save(root / name)
    return made


@pytest.mark.parametrize("parent, strategy", [
    ("mlp", "full"), ("mlp", "head"), ("mlp", "residual"), ("mlp_heads", "multi_head"),
    ("xgb", "full"), ("lgbm", "full"), ("xgb", "residual"), ("ms", "residual"),
    ("lgbm_stores", "full"),  # the store blocks' columns are not taken for hardware features
])
def test_strategy_makes_a_new_model_and_keeps_the_parent(parents, parent, strategy, tmp_path):
    on_source = load_model(parents[parent]).predict(SOURCE)
    model, info = fine_tune(parents[parent], strategy, TARGET)
    after = model.predict(TARGET)
    assert after.shape == (len(TARGET),) and np.isfinite(after).all()
    assert not np.allclose(after, load_model(parents[parent]).predict(TARGET))
    np.testing.assert_array_equal(load_model(parents[parent]).predict(SOURCE), on_source)
    model.save(tmp_path / "child")
    np.testing.assert_allclose(load_model(tmp_path / "child").predict(TARGET), after)


def test_head_only_keeps_the_encoder(parents):
    parent = load_model(parents["mlp"])
    encoder = {k: v.clone() for k, v in parent.net.state_dict().items() if "heads" not in k}
    model, _ = fine_tune(parents["mlp"], "head", TARGET)
    for key, value in model.net.state_dict().items():
        if "heads" not in key:
            assert torch.equal(value, encoder[key]), key


def test_multi_head_adds_a_head_for_the_target(parents):
    model, _ = fine_tune(parents["mlp_heads"], "multi_head", TARGET)
    assert model.net.head_names == ["hw-a", "hw-b"]
    # before transfer, an unseen profile gets the mean of the heads (zero-shot)
    zero_shot = load_model(parents["mlp_heads"]).predict(TARGET)
    assert np.isfinite(zero_shot).all() and not np.allclose(zero_shot, model.predict(TARGET))


@pytest.mark.parametrize("parent, strategy, message", [
    ("xgb", "head", "xgb cannot be fine-tuned with strategy 'head'"),
    ("ms", "full", "metaschedule_xgb cannot be fine-tuned with strategy 'full'"),
    ("mlp", "multi_head", "needs a model pre-trained with head_per_hardware=True"),
    ("mlp", "distill", "unknown transfer strategy 'distill'"),
])
def test_impossible_transfers_are_refused(parents, parent, strategy, message):
    with pytest.raises(TenforgeError, match=message):
        fine_tune(parents[parent], strategy, TARGET)


@pytest.mark.parametrize("parent", ["mlp", "xgb", "lgbm", "lgbm_stores"])
def test_target_with_other_hardware_features_is_refused(parents, parent):
    other = replace(TARGET, hardware_features=np.ones((2, 7), np.float32))
    with pytest.raises(TenforgeError, match="built for 19 hardware features; profile .* has 7"):
        fine_tune(parents[parent], "full", other)


def test_untrained_parent_is_refused(tmp_path):
    create_model("mlp").save(tmp_path / "u")
    with pytest.raises(TenforgeError, match="is not trained"):
        fine_tune(tmp_path / "u", "full", TARGET)


def test_every_strategy_is_covered():
    from tenforge.cli.parser import build_parser

    assert set(STRATEGIES) == {"full", "head", "residual", "multi_head"}
    transfer = build_parser()._subparsers._group_actions[0].choices["transfer"]
    strategy = next(a for a in transfer._actions if a.dest == "strategy")
    assert tuple(strategy.choices) == STRATEGIES  # the CLI lists the registry's choices
