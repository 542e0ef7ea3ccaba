"""What a retune records: its `tuning_runs` row and `tuning_curve` points, from the validated
request and what tune_network returned (the columns are documented in storage/schema.sql)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from core.hardware import HardwareProfile

if TYPE_CHECKING:  # only for the hints: importing tasks.retune here would be a cycle
    from tasks.retune import RetuneSpec
    from tasks.tuning import TuningResult


def profile_hash(profile: HardwareProfile) -> str:
    """Identity of everything about a profile that changes tuning results."""
    blob = json.dumps({"row": profile.as_row(), "measure": asdict(profile.measure)},
                      sort_keys=True, default=str).encode()
    return hashlib.sha1(blob).hexdigest()[:12]


def tuning_row(spec: RetuneSpec, result: TuningResult, profile: HardwareProfile,
               tuning_id: str) -> dict[str, Any]:
    """The run's `tuning_runs` row: the request, the search's figures, the build it timed."""
    from core.tvm_env import tvm_version

    held = result.held
    return {
        "tuning_id": tuning_id, "network": spec.network, "batch_size": spec.batch_size,
        "input_size": spec.input_size, "network_hash": result.network_hash,
        "hardware": profile.name, "profile_hash": profile_hash(profile),
        "cost_model": spec.cost_model, "scheduler": spec.scheduler,
        "trials_budget": spec.trials, "minutes_budget": spec.minutes,
        "flops_share": spec.flops_share, "seed": spec.seed,
        "population": spec.population, "search_population": result.population,
        "tasks_total": result.tasks_total, "tasks_tuned": len(result.tasks_tuned),
        "trials": result.trials, "errors": result.errors, "search_s": result.search_s,
        "estimated_latency_s": result.estimated_s,
        "untuned_latency_s": result.untuned["latency_s"],
        "tuned_latency_s": result.tuned["latency_s"],
        "tuned_run_secs": result.tuned["run_secs"],
        "tuned_functions": result.tuned["tuned_functions"],
        "tir_functions": result.tuned["tir_functions"],
        "database_dir": result.database_dir, "tvm_version": tvm_version(),
        "rejected_by_rules": result.rejected_by_rules, "stop_reason": result.stop_reason,
        "measure_s": result.measure_s, "build_s": result.build_s,
        "search_threads": result.search_threads,
        "warm_start": spec.warm_start, "graph": spec.graph,
        "trials_per_round": spec.trials_per_round, "warm_samples": result.warm_samples,
        "tasks_filled": len(result.tasks_filled),
        "warm_focus": result.warm_focus, "search_cpu_s": result.search_cpu_s,
        "features_reused": (result.feature_cache or {}).get("hits"),
        "features_extracted": (result.feature_cache or {}).get("misses"),
        "online_half": result.online,
        "online_blend": result.online_blend,
        "held_tasks": held.heavy if held else None,
        "held_changed": held.changed if held else None,
        "hold_s": held.hold_s if held else None,
        "hold_top": spec.hold_top,
        "rerank_model": spec.rerank_model,
        "rerank_builds": (result.rerank or {}).get("built"),
        "rerank_build_s": (result.rerank or {}).get("build_s"),
        "builds_cut": result.builds_cut,
        "tile_mix": result.tile_mix,
    }


def curve_rows(result: TuningResult) -> list[dict[str, Any]]:
    """Its `tuning_curve` points: best so far after every measured batch (None: no valid
    measurement of that task yet)."""
    return [{"trials": p.trials, "wall_s": p.wall_s, "task_name": p.task,
             "task_best_s": p.task_best_s if p.task_best_s != float("inf") else None,
             "estimated_latency_s": p.estimated_s} for p in result.curve]
