"""What tune_network refuses before it starts: settings that cannot mean anything together,
each with one line that says what would be right."""

from __future__ import annotations

from core.errors import TenforgeError
from tasks.tuning.contexts import WARM_SAMPLES


def saved_model_path(cost_model: str) -> str | None:
    """The saved tenforge model `cost_model` names; None for MetaSchedule's XGB."""
    return None if cost_model in ("xgb", "metaschedule-xgb") else cost_model


def check_warm_start(warm_start: int | None, cost_model: str, scheduler: str) -> None:
    """A warm start needs a learned model to rank with and a search to hand over to
    (`cost_model`: a model artifact, or "xgb" for MetaSchedule's)."""
    if warm_start is None:
        return
    if warm_start < 1:
        raise TenforgeError(f"--warm-start {warm_start}: measure at least 1 candidate per task "
                            "(0: no warm start)")
    if saved_model_path(cost_model) is None:
        raise TenforgeError("--warm-start ranks candidates with a learned model and this run "
                            "uses MetaSchedule's XGB: name a registered model (or leave "
                            "--cost-model out where the store has one)")
    if scheduler == "instant":
        raise TenforgeError("--warm-start precedes a search; the instant scheduler measures "
                            "the model's top candidates alone: leave one of them out")


def check_warm_samples(warm_samples: int | None, warm_start: int | None) -> int | None:
    """The candidates a warm start ranks per task, resolved: WARM_SAMPLES by default, None
    without a warm start; refused where it cannot mean anything."""
    from tasks.validation import check_positive_ints

    if warm_samples is None:
        return WARM_SAMPLES if warm_start else None
    check_positive_ints(warm_samples=warm_samples)
    if not warm_start:
        raise TenforgeError("--warm-samples sets how many candidates a warm start ranks per "
                            "task and this run has none (--warm-start 0, MetaSchedule's XGB "
                            "or the instant scheduler): leave --warm-samples out")
    if warm_samples < warm_start:
        raise TenforgeError(f"--warm-samples {warm_samples} ranks fewer candidates than "
                            f"--warm-start {warm_start} measures; give at least {warm_start}")
    return warm_samples


def check_online_blend(blend: str, online: int | None) -> None:
    from models.ms_adapter import BLENDS

    if blend not in BLENDS:
        raise TenforgeError(f"online blend {blend!r}: choose one of {', '.join(BLENDS)}")
    if blend != "count" and not online:
        raise TenforgeError(f"online blend {blend!r} weighs an online model; give --online N "
                            "(its count rule until a task's batches decide) or leave it out")


def check_tile_mix(tile_mix: float | None, cost_model: str, scheduler: str,
                   steer: bool = False) -> None:
    """A tile mix (models/tile_mix.py) re-scores a learned model's picks in a search; steering
    directs its quota."""
    if tile_mix is None:
        if steer:
            raise TenforgeError("tile steering directs a tile mix's quota: give the mix's share "
                                "(e.g. tile_mix=0.25) or leave steering off")
        return
    if not 0 < tile_mix < 1:
        raise TenforgeError(f"tile mix {tile_mix}: give the share of a task's measurements kept "
                            "outside its dominant tile group, in (0, 1)")
    if saved_model_path(cost_model) is None or scheduler == "instant":
        raise TenforgeError("a tile mix re-scores a learned model's picks in a search: name a "
                            "registered --cost-model and a searching scheduler, or leave it out")
