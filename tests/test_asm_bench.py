"""bench/asm_features.py: its arms and its one-line refusals (the bench itself is a study)."""

from __future__ import annotations

import pytest

from bench.asm_features import RECIPE, arms, check_args

PROFILE = "cpu-example-1t"  # any one-CPU profile name: check_args reads the name only


def test_the_arms_differ_only_in_the_asm_block_and_the_share_of_tasks():
    (full, full_params, full_share), (plain, plain_params, share), (asm, asm_params, share2) = \
        arms(RECIPE)
    assert (full_share, share, share2) == (False, True, True)
    assert full_params == plain_params == RECIPE
    assert asm_params == {**RECIPE, "asm_features": True}


@pytest.mark.parametrize("train_tasks, hardware, processes, message", [
    (0.0, PROFILE, 2, "--train-tasks 0.0: give a share above 0"),
    (1.5, PROFILE, 2, "--train-tasks 1.5"),
    (0.25, "gpu-h200", 2, "give one CPU profile"),
    (0.25, "cpu-a-1t,cpu-b-1t", 2, "give one CPU profile"),
    (0.25, PROFILE, 0, "--processes 0"),
])
def test_bad_arguments_are_refused_in_one_line(train_tasks, hardware, processes, message):
    with pytest.raises(SystemExit) as refused:
        check_args(train_tasks, hardware, processes)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_good_arguments_pass():
    check_args(0.25, PROFILE, 2)


def test_the_asm_gain_is_the_blocks_share_of_the_trees_gain():
    from dataclasses import replace

    import numpy as np

    from bench.asm_features import asm_gain
    from models.asm_features import ASM_DIM, ASM_NAMES
    from models.registry import create_model
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset()
    asm = np.zeros((len(data), ASM_DIM), np.float32)
    asm[:, 3] = np.where(np.isfinite(data.latency), -np.log(data.latency), -99)
    model = create_model("lgbm", seed=0, asm_features=True, n_estimators=20)
    model.fit(replace(data, asm=asm), None)
    gain = asm_gain(model)
    assert 0 < gain["all"] <= 1 and list(gain)[1] == ASM_NAMES[3]
    assert sum(v for k, v in gain.items() if k != "all") == pytest.approx(gain["all"])


def test_rerank_orders_only_the_first_models_top_picks_by_the_second():
    import numpy as np

    from bench.asm_features import rerank_top

    group = np.array([0, 0, 0, 0, 1, 1])
    first = np.array([4.0, 3.0, 2.0, 1.0, 0.0, 5.0])   # group 0: rows 0 > 1 > 2 > 3
    second = np.array([0.0, 9.0, 99.0, 7.0, 1.0, 0.0])  # prefers 2, then 1: 2 is not top 2
    got = rerank_top(first, second, group, 2)
    order0 = np.argsort(-got[:4], kind="stable")
    assert order0.tolist() == [1, 0, 2, 3]  # top 2 swapped, the rest in first's order
    assert np.argsort(-got[4:]).tolist() == [0, 1]  # group 1: second prefers row 4 over 5
    assert rerank_top(first, second, group, 1)[:4].argmax() == 0


def test_nothing_to_rerank_is_refused():
    with pytest.raises(SystemExit, match="--rerank 1"):
        check_args(0.25, PROFILE, 2, 1)
