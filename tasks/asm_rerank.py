"""A second look at the top of a model's ranking: what LLVM made of each pick.

Instant tuning (and a warm start) ranks hundreds of sampled candidates a task with a model that
reads the schedule (per-store features, trace, tiles) and measures the top few. A model that
also reads the compiled code's asm columns (models/asm_features.py: FMA lanes per instruction,
spills, loads per FMA, ...) ranks held-out networks better (docs/cost-models.md, sessions
91-92), but each of its rows costs a build (~0.2 s a candidate on a core of a Zen 4). So the
re-ranker builds only the first model's top `pool` of a task, on the measurer's build workers
(no linking, nothing run), and orders them by the asm model; the measurer then takes the top
of the new order. A candidate whose build fails goes to the end of the pool: it would fail
measuring too. x86 CPU profiles only (the columns read x86 assembly).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from core.errors import TenforgeError
from core.hardware import HardwareProfile

RERANK_POOL = 32  # the first model's picks a task built and re-ordered


@dataclass(frozen=True)
class Rerank:
    """What re-ranking by the code does: `model`, an asm model's saved folder, orders the
    first model's top `pool` picks of each task that carries `flops_share` of the network's
    FLOPs x occurrences (tasks.tuning.selection.select_tasks' rule; the other tasks keep the
    first model's order: a build costs as much on a reshape as on a convolution)."""

    model: str
    pool: int = RERANK_POOL
    flops_share: float = 1.0


def checked_rerank_model(rerank: Rerank, profile: HardwareProfile) -> Any:
    """The asm model of `rerank`, loaded, once it is known to fit: an x86 CPU `profile`, a
    model that reads the asm columns, a pool of at least two, a share in (0, 1]. One-line
    errors otherwise."""
    from models.registry import load_model

    model_path, pool = rerank.model, rerank.pool
    if not profile.x86_cpu:
        raise TenforgeError(f"re-ranking reads x86 assembly; {profile.name!r} is a "
                            f"{profile.target_kind}/{profile.arch or '?'} profile: tune it "
                            "without a re-rank model")
    if pool < 2:
        raise TenforgeError(f"re-rank pool {pool}: give at least 2 candidates a task "
                            f"(default {RERANK_POOL})")
    if not 0 < rerank.flops_share <= 1:
        raise TenforgeError(f"re-rank FLOPs share {rerank.flops_share}: give a share of the "
                            "network's FLOPs x occurrences in (0, 1]")
    model = load_model(model_path)
    if not model.takes_asm:
        raise TenforgeError(f"model {model_path} does not read the asm columns, so it cannot "
                            "re-rank by them: give one trained with asm_features "
                            "(`tenforge dataset asm`, then pretrain with that parameter)")
    return model


class AsmReranker:
    """Re-orders a task's top `rerank.pool` candidates (tasks.sampling.Candidate) by the asm
    model of `rerank`, built by `measurer`'s build workers (tasks.measure.Measurer.
    build_asm: its timeouts and crash handling). Remembers each candidate's columns for the
    run, so a candidate ranked again is not built again."""

    def __init__(self, rerank: Rerank, profile: HardwareProfile, measurer: Any) -> None:
        self.model = checked_rerank_model(rerank, profile)
        self.settings, self.profile, self.measurer = rerank, profile, measurer
        self.hardware = np.array(profile.feature_vector(), np.float32)
        self._columns: dict[str, np.ndarray | None] = {}  # schedule hash -> asm (None: failed)
        self.built = self.failed = 0
        self.build_s = 0.0  # wall time spent building for the columns

    def summary(self) -> dict[str, Any]:
        """What the run's re-ranking was and cost: TuningResult.rerank."""
        return {"model": self.settings.model, "pool": self.settings.pool,
                "flops_share": self.settings.flops_share, "built": self.built,
                "failed": self.failed, "build_s": round(self.build_s, 3)}

    def order(self, mod_json: str, workload: str, flops: float,
              candidates: Sequence[Any]) -> list[int]:
        """Indices of `candidates` (one task's, the first model's order, best first; the task
        `workload` hash, its module `mod_json`): its first `pool` ordered by the asm model,
        those whose build failed last; the rest after them, as they were."""
        top = list(candidates[:self.settings.pool])
        self._build(mod_json, workload, flops,
                    [c for c in top if c.schedule_hash not in self._columns])
        rows = [self._columns[c.schedule_hash] for c in top]
        built = [i for i, row in enumerate(rows) if row is not None]
        failed = [i for i, row in enumerate(rows) if row is None]
        scores = self._scores([top[i] for i in built], [rows[i] for i in built])
        ordered = [built[j] for j in np.argsort(-scores, kind="stable")]
        return ordered + failed + list(range(len(top), len(candidates)))

    def _build(self, mod_json: str, workload: str, flops: float, candidates: list[Any]) -> None:
        from core.records import MeasureJob

        if not candidates:
            return
        started = time.monotonic()
        # ids of their own, below the tuner's (>= 0): the measurer names build files by id
        columns = self.measurer.build_asm([
            MeasureJob(-1 - self.built - i, workload, mod_json, c.trace_json, flops)
            for i, c in enumerate(candidates)])
        self.build_s += time.monotonic() - started
        for candidate, row in zip(candidates, columns):
            self._columns[candidate.schedule_hash] = (None if row is None
                                                      else np.asarray(row, np.float32))
        self.built += len(candidates)
        self.failed += sum(row is None for row in columns)

    def _scores(self, candidates: list[Any], rows: list[np.ndarray]) -> np.ndarray:
        from models.dataset import dataset_from_features

        if not candidates:
            return np.zeros(0)
        data = dataset_from_features([c.features for c in candidates], self.profile.name,
                                     self.hardware, traces=[c.trace_json for c in candidates])
        return np.asarray(self.model.predict(replace(data, spec=replace(data.spec, asm=True),
                                                     asm=np.stack(rows))), np.float64)
