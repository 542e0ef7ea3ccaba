"""bench/objectives.py: the pointwise regressions' targets, ranks within tasks, and a
regression fitted with a ranking recipe's inputs and settings that ranks a synthetic task set
much better than chance."""

import numpy as np
import pytest

from bench.objectives import fit_regression, ranks_within_tasks, regression_target
from models.metrics import pairwise_accuracy, per_task
from models.registry import create_model
from tests.models.synthetic import synthetic_dataset


def test_targets_are_the_log_label_and_the_log_throughput():
    data = synthetic_dataset(n_groups=4, per_group=6)
    label = regression_target(data, "log_label")
    ok = np.isfinite(data.latency)
    assert np.allclose(label[ok], np.log(np.clip(data.label[ok], 1e-3, 1)))
    assert np.all(label[~ok] == np.log(1e-3))  # a failed candidate sits at the floor
    throughput = regression_target(data, "log_throughput")
    assert np.allclose(throughput[ok], np.log(1e6 / data.latency[ok]))
    assert np.isnan(throughput[~ok]).all()  # left out of training
    with pytest.raises(ValueError, match="give log_label or log_throughput"):
        regression_target(data, "latency")


def test_ranks_within_tasks_put_each_task_on_zero_to_one():
    data = synthetic_dataset(n_groups=3, per_group=5)
    scores = np.arange(len(data), dtype=float)[::-1]
    ranks = ranks_within_tasks(data, scores)
    for g in range(3):
        rows = np.flatnonzero(data.group == g)
        assert sorted(ranks[rows]) == [0, 0.25, 0.5, 0.75, 1]
        assert ranks[rows[0]] == 1  # the highest score of the task


@pytest.mark.parametrize("target", ["log_label", "log_throughput"])
def test_a_regression_with_the_recipe_settings_ranks_well_above_chance(target):
    train = synthetic_dataset(n_groups=16, per_group=32, seed=0)
    test = synthetic_dataset(n_groups=8, per_group=32, seed=1)
    model = create_model("lgbm", seed=0, n_estimators=60, task_weight_power=0.25)
    model.fit(train, None)
    booster = fit_regression(model, train, target)
    from models._trees import config_inputs

    scores = booster.predict(config_inputs(test, model.config))
    assert per_task(pairwise_accuracy, test.label, scores, test.group) > 0.7
