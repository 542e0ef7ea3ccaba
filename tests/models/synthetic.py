"""A small synthetic Dataset (a test double: random per-store features, latencies that depend
on them) so model code is tested without compiling anything."""

from __future__ import annotations

import numpy as np

from models.dataset import FEATURE_DIM, Dataset, DataSpec


def synthetic_dataset(n_groups: int = 8, per_group: int = 24, seed: int = 0,
                      hardware: tuple[str, ...] = ("hw-a", "hw-b"), fail_every: int = 11
                      ) -> Dataset:
    rng = np.random.default_rng(seed)
    n = n_groups * per_group
    n_stores = rng.integers(1, 5, size=n)
    offsets = np.concatenate([[0], np.cumsum(n_stores)]).astype(np.int64)
    rows = rng.normal(size=(int(offsets[-1]), FEATURE_DIM)).astype(np.float32)
    group = np.repeat(np.arange(n_groups), per_group).astype(np.int32)
    # latency falls with the first feature summed over stores, plus noise; some fail
    signal = np.add.reduceat(rows[:, 0], offsets[:-1])
    latency = np.exp(-0.5 * signal + 0.1 * rng.normal(size=n)) * (1 + group)
    latency[::fail_every] = np.inf
    best = np.full(n_groups, np.inf)
    np.minimum.at(best, group, latency)
    label = np.where(np.isfinite(latency), best[group] / latency, 0).astype(np.float32)
    workloads = np.array([f"w{g}" for g in range(n_groups)])
    return Dataset(
        spec=DataSpec(hardware=hardware), candidate_id=np.arange(n, dtype=np.int64),
        group=group, latency=latency, label=label, store_offsets=offsets, store_features=rows,
        group_hardware=(np.arange(n_groups) % len(hardware)).astype(np.int32),
        group_workload=workloads, group_task_name=workloads,
        group_flops=np.full(n_groups, 1e6), hardware_names=hardware,
        hardware_features=rng.uniform(1, 1e6, size=(len(hardware), 19)).astype(np.float32),
        workload_networks={f"w{g}": {f"net{g % 3}": 1} for g in range(n_groups)})
