"""Dataset pruning (Verma et al.'s hardware-aware sampling): train on the measurements that
matter.

1. Drop invalid candidates (failed to build or run: they carry no latency).
2. Drop hopeless ones: label below `hopeless_below` (e.g. 0.02 = 50x slower than the task's
   best), which a tuner would never pick and which only teach the model the easy part.
3. Reach `keep_fraction` of the original candidates, in one of two ways (`mode`):
   - "tasks": rank tasks by importance = FLOPs x occurrences (how often the networks run the
     task: what it contributes to end-to-end latency) and keep whole tasks, most important first;
   - "per_task": keep every task but cap the candidates per task at the same number (the largest
     cap that fits the budget; rows left over go to the most important tasks), candidates chosen
     at random within a task. A ranking model generalizes across tasks: fewer candidates of
     every task cost less than losing tasks (bench/transfer.py compares both).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.errors import TenforgeError
from models.dataset import Dataset


@dataclass(frozen=True)
class PruneSpec:
    keep_fraction: float = 0.5
    hopeless_below: float = 0.02
    drop_invalid: bool = True
    mode: str = "per_task"  # per_task | tasks (bench/transfer.py: per_task keeps pairwise
    # accuracy within 0.005 at half the data, whole tasks lose 0.06)
    seed: int = 0  # which candidates "per_task" keeps

    def __post_init__(self) -> None:
        if not 0 < self.keep_fraction <= 1:
            raise TenforgeError(f"keep_fraction must be in (0, 1], got {self.keep_fraction}")
        if not 0 <= self.hopeless_below < 1:
            raise TenforgeError(f"hopeless_below must be in [0, 1), got {self.hopeless_below}")
        if self.mode not in ("tasks", "per_task"):
            raise TenforgeError(f"pruning mode must be 'tasks' or 'per_task', got {self.mode!r}")


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
    if spec.mode == "per_task":
        return _cap_per_task(data, np.flatnonzero(keep), int(budget), importance, spec.seed)
    chosen = np.zeros(len(data), bool)
    for g in np.argsort(-importance, kind="stable"):
        if chosen.sum() >= budget:
            break
        chosen |= keep & (data.group == g)
    return np.flatnonzero(chosen)


def _cap_per_task(data: Dataset, rows: np.ndarray, budget: int, importance: np.ndarray,
                  seed: int) -> np.ndarray:
    """Rows kept when every task keeps at most the same number of its `rows`."""
    rng = np.random.default_rng(seed)
    groups, counts = np.unique(data.group[rows], return_counts=True)
    if counts.sum() <= budget:
        return np.sort(rows)
    low, high = 0, int(counts.max())  # the largest cap c with sum(min(count, c)) <= budget
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if np.minimum(counts, mid).sum() <= budget else (low, mid - 1)
    quota = np.minimum(counts, low)
    spare = budget - int(quota.sum())
    for i in np.argsort(-importance[groups], kind="stable"):  # leftovers: important tasks first
        if spare <= 0:
            break
        if quota[i] < counts[i]:
            quota[i] += 1
            spare -= 1
    kept = [rng.choice(rows[data.group[rows] == g], size=q, replace=False)
            for g, q in zip(groups, quota) if q > 0]
    return np.sort(np.concatenate(kept))
