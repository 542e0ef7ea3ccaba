"""Plain steps of the `retune` flow (no Prefect): check the request, pick the cost model
(tasks/retune_model.py), decide whether anything changed since the last run, tune, and store
the result.

A failed or interrupted retune writes nothing to `tuning_runs` and never touches an earlier
run's database folder, so the previous best result stays as it was.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.spec import Spec
from storage import queries
from storage.ms_database import MS_DATABASE_FILES, RECORD_FILE
from storage.store import Store
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.retune_model import BASELINE, choose_model, rerank_artifact
from tasks.retune_record import curve_rows, profile_hash, tuning_row
from tasks.sources import Workload
from tasks.tuning.hold import HOLD_TOP, check_hold_top


def tuning_dir(db: str) -> Path:
    """Tuning databases live next to the store: <store folder>/tuning/<tuning id>/."""
    return Path(db).resolve().parent / "tuning"


@dataclass(frozen=True)
class RetuneSpec(Spec):
    """A validated retune request: the profile's real name, the cost model chosen (and why)."""

    network: str  # the store's name for it
    workload: Workload  # where it comes from (tasks/sources.py)
    hardware: str
    trials: int
    minutes: float | None
    cost_model: str  # a registered model id, or BASELINE
    model_path: str | None  # its artifact (None: BASELINE, trained from scratch while tuning)
    scheduler: str
    flops_share: float
    batch_size: int
    input_size: int
    seed: int
    population: int | None  # None: chosen per round (tasks.tuning.contexts.search_population)
    model_choice: str  # one line: which model, why, and a warning when it never saw this CPU
    out: str | None = None  # also write a deployable folder here (tasks/deploy.py)
    warm_start: int | None = None  # the model's top K per task measured before the search
    graph: str = "exported"  # how the network is prepared before tuning (core.graphs.GRAPHS)
    trials_per_round: int | None = None  # None: two turns of the budget per task (4 to 64)
    warm_samples: int | None = None  # candidates a warm start ranks per task (None: no warm)
    hold_top: int = HOLD_TOP  # a heavy task's best records the hold may measure (0: no hold)
    rerank_model: str | None = None  # an asm model re-ordering the picks (tasks.asm_rerank)
    rerank_path: str | None = None  # its artifact
    tile_mix: float | None = None  # a search's share kept outside a task's dominant tile group


def validate_retune(db: str | None, network: str, hardware: str, trials: int,
                    minutes: float | None, cost_model: str | None, scheduler: str,
                    flops_share: float, batch_size: int, seed: int,
                    population: int | None = None, out: str | None = None,
                    input_size: int | None = None, warm_start: int | None = None,
                    graph: str | None = None,
                    trials_per_round: int | None = None,
                    warm_samples: int | None = None,
                    hold_top: int | None = None,
                    rerank_model: str | None = None,
                    tile_mix: float | None = None) -> RetuneSpec:
    """Check every retune parameter before any work; return them resolved (the cost model
    chosen, the profile's real name)."""
    from core.graphs import check_graph, default_graph, resolve_graph
    from tasks.network_registry import check_registrable
    from tasks.networks import ZOO
    from tasks.sources import resolve_workload
    from tasks.tuning import SCHEDULERS
    from tasks.tuning.checks import check_tile_mix, check_warm_samples, check_warm_start
    from tasks.tuning.defaults import learned_search
    from tasks.validation import check_db_path, check_positive_ints

    path = check_db_path(db)
    if graph is not None:
        check_graph(graph)
    workload = resolve_workload(network, path)
    check_registrable(path, workload)
    profile = resolve_profile(hardware)
    graph = resolve_graph(graph or default_graph(profile.target_kind), profile.target_kind,
                          profile.features.get("vector_unit_bytes", 0))
    check_runnable_here(profile)
    check_positive_ints(trials=trials, batch_size=batch_size)
    if population is not None:
        check_positive_ints(population=population)
    if trials_per_round is not None:
        check_positive_ints(trials_per_round=trials_per_round)
        if scheduler == "instant":
            raise TenforgeError("--trials-per-round sets the search's rounds and the instant "
                                "scheduler does not search; leave it out, or pick a searching "
                                "scheduler such as gradient")
    if not workload.is_zoo and (batch_size != 1 or input_size is not None):
        raise TenforgeError(f"{workload.name}'s sizes come from its inputs; leave --batch-size "
                            "and --input-size out (or register it with other --input-shape "
                            "sizes)")
    if input_size is not None:
        check_positive_ints(input_size=input_size)
    if minutes is not None and not minutes > 0:
        raise TenforgeError(f"minutes must be positive (or omitted for no time limit), "
                            f"got {minutes!r}")
    if scheduler not in SCHEDULERS:
        raise TenforgeError(f"unknown scheduler {scheduler!r}; choose one of "
                            f"{', '.join(SCHEDULERS)}")
    if not 0 < flops_share <= 1:
        raise TenforgeError(f"flops share must be in (0, 1], got {flops_share}")
    if out is not None:
        from tasks.deploy import check_out_dir

        out = str(check_out_dir(out))
    if scheduler == "instant" and cost_model == BASELINE:
        raise TenforgeError(f"the instant scheduler ranks candidates with a learned model; "
                            f"{BASELINE} starts untrained: name a registered model or leave "
                            "--cost-model out")
    cost_model, model_path, choice = choose_model(path, profile, cost_model)
    if scheduler == "instant" and model_path is None:
        raise TenforgeError("the instant scheduler needs a learned model and this store has "
                            "none: `tenforge onboard` (or search / pretrain) first")
    # left out: the bench's default learned search where a learned model searches
    warm_start, tile_mix = learned_search(model_path is not None, scheduler, warm_start,
                                          tile_mix)
    check_warm_start(warm_start, model_path or "xgb", scheduler)
    warm_samples = check_warm_samples(warm_samples, warm_start)
    check_tile_mix(tile_mix, model_path or "xgb", scheduler)
    hold_top = check_hold_top(hold_top)
    rerank_path = (None if rerank_model is None else rerank_artifact(
        path, rerank_model, profile, scheduler == "instant" or bool(warm_start)))
    return RetuneSpec(db=path, network=workload.name, workload=workload,
                      hardware=profile.name, trials=trials,
                      minutes=minutes, cost_model=cost_model or BASELINE, model_path=model_path,
                      scheduler=scheduler, flops_share=flops_share, batch_size=batch_size,
                      input_size=(0 if not workload.is_zoo else input_size
                                  or ZOO[workload.name].default_size),
                      seed=seed, population=population,
                      model_choice=choice, out=out, warm_start=warm_start, graph=graph,
                      trials_per_round=trials_per_round, warm_samples=warm_samples,
                      hold_top=hold_top, rerank_model=rerank_model, rerank_path=rerank_path,
                      tile_mix=tile_mix)


def unchanged_since_last(spec: RetuneSpec, network_hash: str) -> dict[str, Any] | None:
    """The last tuning run if it had the same network, profile, cost model and budget (then
    there is nothing new to learn), else None."""
    if not Path(spec.db).exists():
        return None
    profile = resolve_profile(spec.hardware)
    with Store(spec.db, read_only=True) as store:
        last = store.last_tuning(spec.network, profile.name, spec.batch_size)
    if last is None:
        return None
    same = (last["network_hash"] == network_hash
            and last["profile_hash"] == profile_hash(profile)
            and last["cost_model"] == spec.cost_model
            and last["trials_budget"] == spec.trials
            and last["scheduler"] == spec.scheduler
            and last["flops_share"] == spec.flops_share
            and last["population"] == spec.population
            and last.get("warm_start") == spec.warm_start
            and last.get("trials_per_round") == spec.trials_per_round
            and last.get("warm_samples") == spec.warm_samples
            and last.get("hold_top") == spec.hold_top
            and last.get("rerank_model") == spec.rerank_model
            and last.get("tile_mix") == spec.tile_mix
            and (last.get("graph") or "exported") == spec.graph)
    return last if same else None


def network_hash(network: str | Workload, batch_size: int, input_size: int,
                 graph: str = "exported") -> str:
    from core.tvm_env import structural_hash_hex
    from tasks.workloads import import_to_relax

    return structural_hash_hex(import_to_relax(network, batch_size, input_size, graph))


def unfinished_database(db: str, spec: RetuneSpec, tuning_id: str) -> Path | None:
    """The tuning database of the newest retune of the same network, size and profile that
    never finished (killed, or failed after measuring), if it measured anything."""
    with Store(db, read_only=True) as store:
        runs = queries.unfinished_retunes(store, tuning_id, spec.hardware, spec.network,
                                          spec.batch_size, spec.graph)
    for run_id in runs:
        folder = tuning_dir(db) / run_id
        records = folder / RECORD_FILE
        if records.exists() and records.stat().st_size > 0:
            return folder
    return None


def resume_from(db: str, spec: RetuneSpec, tuning_id: str, work_dir: Path,
                report: Callable[[str], None]) -> str | None:
    """Start `work_dir` with what a killed retune of the same network and profile measured:
    MetaSchedule's search then starts from those records (its initial population takes the
    best of them) and never measures them again, and the build uses them; the killed run is
    marked `resumed` (this run holds its records now). Returns its id."""
    import shutil

    found = unfinished_database(db, spec, tuning_id)
    if found is None:
        return None
    work_dir.mkdir(parents=True, exist_ok=True)
    for name in MS_DATABASE_FILES:
        shutil.copyfile(found / name, work_dir / name)
    records = sum(1 for _ in open(work_dir / RECORD_FILE))
    # its records live on in this run's database: no later retune resumes from it again
    # (one did, re-measuring nothing but counting the old records as its own)
    with Store(db) as store:
        store.finish_run(found.name, "resumed", {"resumed_by": tuning_id, "records": records})
    report(f"resuming from {records} measured candidates of unfinished retune {found.name}")
    return found.name


def write_back(spec: RetuneSpec, profile: HardwareProfile, work_dir: Path, tuning_id: str,
               report: Callable[[str], None]) -> int:
    """Every candidate the search measured into the store (tasks/tuning/writeback.py), after
    the run is recorded: a failure here loses no tuning result, and is said."""
    from tasks.collect import network_task_ids
    from tasks.tuning.writeback import store_tuning_measurements

    try:
        task_ids = network_task_ids(spec.db, profile, spec.workload, spec.batch_size,
                                    spec.input_size if spec.workload.is_zoo else None,
                                    spec.graph)
        added = store_tuning_measurements(spec.db, profile, task_ids, work_dir, tuning_id)
    except Exception as exc:  # noqa: BLE001 - the tuning run is recorded; keep it
        report(f"WARNING: the tuning measurements were not stored ({type(exc).__name__}: "
               f"{str(exc).strip().splitlines()[-1] if str(exc).strip() else ''})")
        return 0
    report(f"stored {added['measurements']} tuning measurements ({added['candidates']} new "
           f"candidates) of {added['records']} records, as search-biased training data")
    return added["measurements"]


def run_retune(spec: RetuneSpec, tuning_id: str, report: Callable[[str], None] = print,
               on_trials: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Tune (resuming what a killed retune of the same request measured), then record the run
    and its curve in one transaction; returns the summary."""
    from tasks.asm_rerank import Rerank
    from tasks.tuning import tune_network
    from tasks.tuning.contexts import POPULATION_RATIO, WARM_SAMPLES
    from tasks.tuning.defaults import WARM_POPULATION_RATIO

    profile = resolve_profile(spec.hardware)
    work_dir = tuning_dir(spec.db) / tuning_id
    resumed = resume_from(spec.db, spec, tuning_id, work_dir, report)
    result = tune_network(spec.workload, profile, work_dir, spec.trials,
                          minutes=spec.minutes,
                          cost_model=spec.model_path or "xgb", scheduler=spec.scheduler,
                          flops_share=spec.flops_share, seed=spec.seed,
                          population=spec.population, warm_start=spec.warm_start,
                          population_ratio=(WARM_POPULATION_RATIO if spec.warm_start
                                            else POPULATION_RATIO),
                          warm_samples=spec.warm_samples or WARM_SAMPLES,
                          trials_per_iter=spec.trials_per_round, graph=spec.graph,
                          batch_size=spec.batch_size, input_size=spec.input_size,
                          hold_top=spec.hold_top, tile_mix=spec.tile_mix,
                          report=report, on_trials=on_trials,
                          rerank=Rerank(spec.rerank_path) if spec.rerank_path else None)
    row, curve = tuning_row(spec, result, profile, tuning_id), curve_rows(result)
    with Store(spec.db) as store, store.transaction():
        store.upsert_hardware(profile.as_row())
        store.record_tuning(row, curve)
    written = write_back(spec, profile, work_dir, tuning_id, report)
    return {"tuning_id": tuning_id, "network": spec.network, "hardware": profile.name,
            "cost_model": spec.cost_model, "trials": result.trials,
            "search_s": round(result.search_s, 1), "measure_s": round(result.measure_s, 1),
            "build_s": round(result.build_s, 1),
            "trials_per_min": round(60 * result.trials / max(result.search_s, 1e-9), 1),
            "untuned_ms": round(result.untuned["latency_s"] * 1e3, 4),
            "tuned_ms": round(result.tuned["latency_s"] * 1e3, 4),
            "speedup": round(result.speedup, 2), "stop_reason": result.stop_reason,
            "tasks_filled": row["tasks_filled"], "resumed_from": resumed,
            "database_dir": result.database_dir, "measurements_stored": written}
