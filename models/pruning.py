"""Dataset pruning (Verma et al.'s hardware-aware sampling): train on the measurements that
matter.

1. Drop invalid candidates (failed to build or run: they carry no latency).
2. Drop hopeless ones: label below `hopeless_below` (e.g. 0.02 = 50x slower than the task's
   best), which a tuner would never pick and which only teach the model the easy part.
3. Rank tasks by importance = FLOPs x occurrences (how often the networks run the task: what it
   contributes to end-to-end latency) and keep the most important tasks until `keep_fraction`
   of the original candidates is reached.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models.dataset import Dataset
from tenforge.errors import TenforgeError


@dataclass(frozen=True)
class PruneSpec:
    keep_fraction: float = 0.5
    hopeless_below: float = 0.02
    drop_invalid: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.keep_fraction <= 1:
            raise TenforgeError(f"keep_fraction must be in (0, 1], got {self.keep_fraction}")
        if not 0 <= self.hopeless_below < 1:
            raise TenforgeError(f"hopeless_below must be in [0, 1), got {self.hopeless_below}")


def task_importance(data: Dataset) -> np.ndarray:
    """FLOPs x occurrences per group (occurrences = summed network weights; 1 if unknown)."""
    occurrences = np.array([max(sum(data.workload_networks.get(w, {}).values()), 1)
                            for w in data.group_workload], dtype=np.float64)
    return data.group_flops * occurrences


def prune(data: Dataset, spec: PruneSpec) -> np.ndarray:
    """Row indices of `data` to keep, sorted."""
    keep = np.ones(len(data), bool)
    if spec.drop_invalid:
        keep &= np.isfinite(data.latency)
    keep &= data.label >= spec.hopeless_below
    budget = spec.keep_fraction * len(data)
    importance = task_importance(data)
    chosen = np.zeros(len(data), bool)
    for g in np.argsort(-importance, kind="stable"):
        if chosen.sum() >= budget:
            break
        chosen |= keep & (data.group == g)
    return np.flatnonzero(chosen)
