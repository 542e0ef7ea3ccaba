"""What one tuning run gives back (tasks.tuning.run.tune_network): the TuningResult, with the
settings that made it, and the helpers that fill its parts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from tasks.tuning.hold import HoldResult
from tasks.tuning.log import CurvePoint


@dataclass
class TuningResult:
    network: str
    hardware: str
    cost_model: str
    scheduler: str
    tasks_total: int
    tasks_tuned: list[str]
    trials: int
    errors: int
    search_s: float  # the search's wall time, measuring included
    measure_s: float  # of search_s, building and running candidates
    search_threads: int
    population: int  # the evolutionary search's per round (instant: candidates ranked per task)
    stop_reason: str  # trials | deadline | interrupt | exhausted | error
    estimated_s: float | None
    untuned: dict[str, Any]
    tuned: dict[str, Any]
    curve: list[CurvePoint]
    database_dir: str
    network_hash: str
    trials_per_task: dict[str, int]
    rejected_by_rules: int = 0
    trials_per_round: int | None = None  # candidates measured per turn of a task (searches)
    tasks_filled: list[str] = field(default_factory=list)  # unmeasured by the search, picked after
    warm_focus: bool | None = None  # a warm start's search skipped the blind pass (None: no warm)
    warm_samples: int | None = None  # candidates its warm start ranked per task (None: no warm)
    transfer_sources: int = 0  # schedules of other tasks its candidates could be made from
    warm_evolve: int = 0  # generations of model-only evolution on each task's first ranking
    build_s: float = 0.0  # of measure_s, compiling candidates (the rest: running them)
    warm_share: bool = False  # its warm samples went by FLOPs x occurrences, warm_samples the mean
    warm_spread: bool = False  # its warm start measured WARM_SPREAD_TOP a task, the rest by share
    # CPU seconds of this process over search_s: the search's own work (candidates are built
    # and run in worker processes); unlike search_s, blind to other load and to being paused
    search_cpu_s: float | None = None
    # a learned model's feature cache (models/feature_cache.py): hits, misses (None: none used)
    feature_cache: dict[str, int] | None = None
    genetic_iters: int | None = None  # the evolutionary search's mutation rounds (None: instant)
    # a learned search's online model weighed half at this many measurements of a task
    # (models.ms_adapter; None: no online model, or MetaSchedule's XGB)
    online: int | None = None
    # how a task's scores weighed the online model: "count" (by `online` alone) or
    # "prequential" (by the task's own measured batches; models/online_blend.py)
    online_blend: str | None = None
    # prequential: the online model's weight each task's batches chose, by count of tasks
    online_shares: dict[str, int] | None = None
    # the part of a turn the gradient rule counted a focused warm start for (None: a whole one)
    warm_turn: float | None = None
    # the heaviest tasks' picks measured again in fresh processes before compiling
    # (tasks.tuning.hold; None: not held, database_dir is the search's own database)
    held: HoldResult | None = None
    # a batch's builds overlapped the next task's search (tasks.ms_overlap); build_s is then
    # the builds' own wall time, mostly hidden behind the search rather than part of measure_s
    overlap_builds: bool = False
    # an asm model re-ordered the top `pool` picks of the tasks carrying `flops_share` by their
    # compiled code before they were measured (tasks.asm_rerank): model, pool, flops_share,
    # built, failed, build_s (None: none did)
    rerank: dict[str, Any] | None = None
    # builds cut by the run's build cap (tasks/measure/build_cap.py; None: no cap, every build
    # had the measurement settings' timeout)
    builds_cut: int | None = None
    # the share of each task's measurements a learned search kept outside its dominant
    # innermost tile factor (models/tile_mix.py; None: the model's order alone)
    tile_mix: float | None = None
    # the mix's quota steered by measurements (tile_mix.steered; False: the model's order)
    tile_steer: bool = False

    @property
    def speedup(self) -> float:
        return self.untuned["latency_s"] / self.tuned["latency_s"]


def e2e_summary(run: dict[str, Any]) -> dict[str, Any]:
    secs = run["run_secs"]
    return {"latency_s": float(np.median(secs)), "run_secs": secs, "compile_s": run["compile_s"],
            "tuned_functions": len(run["tuned_functions"]),
            "tir_functions": run["tir_functions"]}


def online_shares(model: Any) -> dict[str, int]:
    """A prequential blend's weights as the tasks' batches last chose them: weight -> tasks."""
    blend = getattr(getattr(model, "logic", None), "blend", None)
    if blend is None:
        return {}
    weights = sorted(blend.given.values())
    return {f"{w:.3f}": weights.count(w) for w in dict.fromkeys(weights)}
