"""The pipeline flow's request: collect's checks plus those of the steps it chains."""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import TenforgeError
from core.spec import Spec
from tasks.collect import validate_collect
from tasks.onboard import PER_TASK
from tasks.validation import check_positive_ints


@dataclass(frozen=True)
class PipelineSpec(Spec):
    """A validated pipeline request (the profile's real name)."""

    hardware: str
    networks: tuple[str, ...]
    candidates_per_task: int
    seed: int
    search_trials: int
    search_budget_s: float
    retune_network: str
    retune_trials: int
    calibration_candidates: int
    sources: tuple[str, ...] = ()  # profiles the models learn from; () = every other one


def validate_pipeline(db: str | None, hardware: str, networks: list[str],
                      candidates_per_task: int, seed: int = 0, search_trials: int = 4,
                      search_budget_s: float = 120.0, retune_network: str = "tiny_cnn",
                      retune_trials: int = 16, calibration_candidates: int = 96,
                      sources: list[str] | None = None) -> PipelineSpec:
    from tasks.sources import resolve_workload

    collect = validate_collect(db, hardware, networks, candidates_per_task, seed)
    resolve_workload(retune_network, collect.db)
    check_positive_ints(search_trials=search_trials, retune_trials=retune_trials,
                        calibration_candidates=calibration_candidates)
    if calibration_candidates < 4 * PER_TASK:  # as onboard: 4 tasks, some held out
        raise TenforgeError(f"calibration must be at least {4 * PER_TASK} candidates, got "
                            f"{calibration_candidates}")
    if not search_budget_s > 0:
        raise TenforgeError(f"search budget must be > 0 s, got {search_budget_s}")
    sources = check_sources(collect.db, collect.hardware, sources or [])
    return PipelineSpec(db=collect.db, hardware=collect.hardware, networks=collect.networks,
                        candidates_per_task=candidates_per_task, seed=seed,
                        search_trials=search_trials, search_budget_s=search_budget_s,
                        retune_network=retune_network, retune_trials=retune_trials,
                        calibration_candidates=calibration_candidates, sources=sources)


def check_sources(db: str, target: str, names: list[str]) -> tuple[str, ...]:
    """Source profiles by their real names (`local` and `local-1t` name this machine's): none
    may be the `target`, and each must have data in the store, or, where the store holds none
    yet, in the seed the pipeline then loads into it (load_seed_if_empty)."""
    from pathlib import Path

    from storage.queries import measured_profiles
    from storage.seed import SEED_DIR, find_shards
    from storage.store import Store
    from tasks.hardware import ALIASES, resolve_profile

    names = [resolve_profile(n).name if n in ALIASES else n for n in names]
    if target in names:
        raise TenforgeError(f"source profiles are the other profiles the models learn from; "
                            f"{target} is the target: leave it out of --sources")
    known, where = set(), "the store"
    if Path(db).exists():
        with Store(db, read_only=True) as store:
            known = set(measured_profiles(store))
    if not known and SEED_DIR.is_dir():
        known, where = {m.parent.name for m in find_shards(SEED_DIR)}, "the seed it loads"
    unknown = [n for n in names if n not in known]
    if names and unknown:
        raise TenforgeError(f"no data of source profile(s) {', '.join(unknown)} in {where}; "
                            f"profiles with data: {', '.join(sorted(known)) or 'none'}")
    return tuple(names)
