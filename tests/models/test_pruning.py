"""Pruning keeps the important tasks' useful candidates, up to the asked fraction."""

from dataclasses import replace

import numpy as np
import pytest

from core.errors import TenforgeError
from models.pruning import PruneSpec, prune, task_importance
from tests.models.synthetic import synthetic_dataset


def test_prune_drops_invalid_and_hopeless_and_keeps_important_tasks():
    data = synthetic_dataset(n_groups=6, per_group=20)
    flops = np.array([1e9, 1e6, 5e8, 1e3, 2e9, 1e7])
    data = replace(data, group_flops=flops)
    kept = prune(data, PruneSpec(keep_fraction=0.5, hopeless_below=0.05, mode="tasks"))
    assert np.isfinite(data.latency[kept]).all() and (data.label[kept] >= 0.05).all()
    groups = set(data.group[kept].tolist())
    ranked = list(np.argsort(-task_importance(data)))
    assert groups == set(ranked[:len(groups)])  # the most important tasks, in order
    assert 0.4 * len(data) <= kept.size <= 0.75 * len(data)
    assert prune(data, PruneSpec(keep_fraction=1.0, hopeless_below=0.0)).size == \
        np.isfinite(data.latency).sum()


def test_per_task_pruning_keeps_every_task_with_an_equal_cap():
    data = synthetic_dataset(n_groups=6, per_group=20)
    kept = prune(data, PruneSpec(keep_fraction=0.5, hopeless_below=0.0, mode="per_task"))
    valid = np.isfinite(data.latency)
    assert kept.size == int(0.5 * len(data)) and valid[kept].all()
    per_task = np.bincount(data.group[kept], minlength=data.n_groups)
    assert (per_task > 0).all()  # no task lost
    assert per_task.max() - per_task.min() <= 1 or (per_task == np.bincount(
        data.group[valid], minlength=data.n_groups)).any()  # equal caps, or a task ran out
    again = prune(data, PruneSpec(keep_fraction=0.5, hopeless_below=0.0, mode="per_task"))
    np.testing.assert_array_equal(kept, again)  # seeded


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "random"}, "pruning mode must be"),
    ({"keep_fraction": 0}, "keep_fraction must be in"),
    ({"hopeless_below": 1.5}, "hopeless_below must be in"),
])
def test_bad_prune_specs(kwargs, message):
    with pytest.raises(TenforgeError, match=message):
        PruneSpec(**kwargs)
