"""Which tasks of a network are worth tuning, and the scheduler kinds that share the budget."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Sequence, get_args

from core.errors import TenforgeError

Scheduler = Literal["gradient", "round-robin", "gain", "dual", "instant"]
SCHEDULERS: tuple[str, ...] = get_args(Scheduler)
SEARCH_SCHEDULERS = tuple(s for s in SCHEDULERS if s != "instant")  # instant: no search


@dataclass(frozen=True)
class TaskShare:
    """One extracted task and what it weighs in the network."""

    name: str
    flops: float
    weight: int  # occurrences in the network

    @property
    def importance(self) -> float:
        return self.flops * self.weight


def select_tasks(tasks: Sequence[TaskShare], flops_share: float) -> list[int]:
    """Indices of the most important tasks (FLOPs x occurrences, descending) that together
    carry at least `flops_share` of the network's total; at least one task. A share of 1
    is every task, the zero-FLOP ones too: data movement (transposes, reshapes) has no FLOPs
    but takes time, and left untuned it runs TVM's unscheduled loops (BERT's exported graph
    spent ~360 of 939 ms in them, docs/graph-levers-bert)."""
    if not 0 < flops_share <= 1:
        raise TenforgeError(f"flops share must be in (0, 1], got {flops_share}")
    if flops_share == 1:
        return list(range(len(tasks)))
    total = sum(t.importance for t in tasks)
    order = sorted(range(len(tasks)), key=lambda i: -tasks[i].importance)
    chosen: list[int] = []
    covered = 0.0
    for i in order:
        if chosen and (covered >= flops_share * total or tasks[i].importance <= 0):
            break
        chosen.append(i)
        covered += tasks[i].importance
    return sorted(chosen)
