"""Task weights for the tree models' ranking loss (TreeConfig.task_weight_power): each task's
rows weigh (best latency x the most times a network runs it)^power, a mean of 1 per profile."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from core.errors import TenforgeError
from models._trees import TreeConfig, task_weights, weight_power
from models.dataset import FEATURE_DIM, Dataset, DataSpec
from models.metrics import pairwise_accuracy
from models.registry import create_model
from tests.models.synthetic import synthetic_dataset


def test_weights_follow_latency_times_runs_and_average_one_per_profile():
    data = synthetic_dataset(n_groups=6, hardware=("hw-a", "hw-b"), fail_every=10 ** 6)
    runs = {f"w{g}": {"net": 1 + g, "other": 1} for g in range(6)}  # the most a network runs it
    data = dataclasses.replace(data, workload_networks=runs)
    best = np.array([data.latency[data.group == g].min() for g in range(6)])
    importance = np.sqrt(best * (1 + np.arange(6)))
    got = task_weights(data, 0.5)
    for hardware in (0, 1):
        mine = data.group_hardware == hardware
        np.testing.assert_allclose(got[mine], importance[mine] / importance[mine].mean(),
                                   rtol=1e-6)
    assert task_weights(data, 0.0) == pytest.approx(np.ones(6))


def test_a_task_with_nothing_valid_weighs_one():
    data = synthetic_dataset(n_groups=4, fail_every=10 ** 6)
    latency = data.latency.copy()
    latency[data.group == 2] = np.inf
    got = task_weights(dataclasses.replace(data, latency=latency), 1.0)
    assert got[2] == 1.0 and np.all(np.isfinite(got))


def _two_tasks_that_disagree(per_group: int = 60) -> Dataset:
    """Two tasks on one profile with the same candidates' features and opposite orders: the
    heavy task (milliseconds) is fast where feature 0 is high, the light one (microseconds)
    where it is low. Only the weights can say which order to learn."""
    rng = np.random.default_rng(0)
    rows = rng.normal(size=(per_group, FEATURE_DIM)).astype(np.float32)
    signal = rows[:, 0]
    latency = np.concatenate([1e-3 * np.exp(-signal), 1e-6 * np.exp(signal)])
    group = np.repeat([0, 1], per_group).astype(np.int32)
    best = np.array([latency[:per_group].min(), latency[per_group:].min()])
    n = 2 * per_group
    return Dataset(
        spec=DataSpec(hardware=("hw-a",)), candidate_id=np.arange(n, dtype=np.int64),
        group=group, latency=latency, label=(best[group] / latency).astype(np.float32),
        store_offsets=np.arange(n + 1, dtype=np.int64), store_features=np.vstack([rows, rows]),
        group_hardware=np.zeros(2, np.int32), group_workload=np.array(["heavy", "light"]),
        group_task_name=np.array(["heavy", "light"]), group_flops=np.full(2, 1e6),
        hardware_names=("hw-a",), hardware_features=np.ones((1, 19), np.float32),
        workload_networks={"heavy": {"net": 1}, "light": {"net": 1}})


@pytest.mark.parametrize("family", ["lgbm", "xgb"])
def test_weighted_ranking_follows_the_task_that_costs_the_most(family):
    data = _two_tasks_that_disagree()
    heavy = data.subset(np.flatnonzero(data.group == 0))
    accuracy = {}
    for power in (0.0, 1.0):
        model = create_model(family, seed=0, n_estimators=60, task_weight_power=power)
        model.fit(data)
        accuracy[power] = pairwise_accuracy(heavy.label, model.predict(heavy))
    assert accuracy[1.0] > 0.75, accuracy  # the heavy task's order, learned
    assert accuracy[1.0] - accuracy[0.0] > 0.2, accuracy  # alike, the two orders cancel


def test_an_out_of_range_power_is_refused_in_one_line():
    with pytest.raises(TenforgeError, match="task_weight_power -1.0 is out of range"):
        create_model("lgbm", task_weight_power=-1.0)


@pytest.mark.parametrize("family", ["lgbm", "xgb"])
def test_fine_tuning_weighs_tasks_by_its_own_power(family):
    """A fit weighs by task_weight_power, a fine-tune by fine_tune_task_weight_power where
    given: here a model fit with tasks alike learns the heavy task's order only in a
    fine-tune that weighs it."""
    data = _two_tasks_that_disagree()
    heavy = data.subset(np.flatnonzero(data.group == 0))
    accuracy = {}
    for fine_power in (None, 1.0):
        model = create_model(family, seed=0, n_estimators=80, task_weight_power=0.0,
                             fine_tune_task_weight_power=fine_power)
        model.fit(data)
        model.fine_tune(data, None, "full")
        accuracy[fine_power] = pairwise_accuracy(heavy.label, model.predict(heavy))
    assert accuracy[1.0] - accuracy[None] > 0.1, accuracy


def test_weight_power_of_a_fit_and_a_fine_tune():
    assert weight_power(TreeConfig(task_weight_power=0.25), fine_tuning=True) == 0.25
    config = TreeConfig(task_weight_power=0.25, fine_tune_task_weight_power=0.0)
    assert weight_power(config, fine_tuning=False) == 0.25
    assert weight_power(config, fine_tuning=True) == 0.0
    with pytest.raises(TenforgeError, match="fine_tune_task_weight_power 3 is out of range"):
        TreeConfig(fine_tune_task_weight_power=3)
