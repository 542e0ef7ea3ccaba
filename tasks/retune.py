"""Plain steps of the `retune` flow (no Prefect): check the request, pick the cost model,
decide whether anything changed since the last run, tune, and store the result.

A failed or interrupted retune writes nothing to `tuning_runs` and never touches an earlier
run's database folder, so the previous best result stays as it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from core.errors import TenforgeError
from core.hardware import HardwareProfile
from core.spec import Spec
from storage import queries
from storage.ms_database import MS_DATABASE_FILES, RECORD_FILE
from storage.store import Store
from tasks.hardware import check_runnable_here, resolve_profile
from tasks.retune_record import curve_rows, profile_hash, tuning_row
from tasks.sampling import FEATURE_EXTRACTOR  # what the MetaSchedule adapter feeds a model
from tasks.shipped import SHIPPED, ShippedModel, require_shipped_for, shipped_for
from tasks.sources import Workload
from tasks.tuning.hold import HOLD_TOP, check_hold_top

BASELINE = "metaschedule-xgb"  # MetaSchedule's own XGBModel, trained from scratch while tuning


def tuning_dir(db: str) -> Path:
    """Tuning databases live next to the store: <store folder>/tuning/<tuning id>/."""
    return Path(db).resolve().parent / "tuning"


def best_model(store: Store, hardware: str) -> str | None:
    """The registered model to tune `hardware` with: the best top-1 measured on this profile's
    held-out tasks (`model_evaluations`, written by transfer and onboard), else the best held-out
    top-1 among models trained on this profile's data, else among all models (they take
    hardware features as inputs); None when nothing is registered."""
    return queries.best_model_id(store, hardware, FEATURE_EXTRACTOR)


def explain_choice(row: dict[str, Any], hardware: str, asked: bool,
                   top1_here: float | None = None) -> str:
    """Why this model tunes `hardware`, and a warning when it never saw that profile's data
    and was never measured on it."""
    spec = json.loads(row["data_spec_json"])
    trained_on = list(spec.get("hardware") or [])
    top1 = json.loads(row["metrics_json"] or "{}").get("peak1")
    why = ("as asked" if asked else
           f"the best top-1 measured on {hardware}'s held-out tasks ({top1_here:.3f})"
           if top1_here is not None else
           f"the best held-out top-1 ({top1:.3f})" if isinstance(top1, (int, float)) else
           "the newest registered model (no held-out score)")
    head = f"cost model {row['model_id']} ({row['kind']}): {why}"
    if hardware in trained_on:
        return f"{head}; trained on {hardware}'s data"
    if top1_here is not None:
        return f"{head}; trained on {', '.join(trained_on)}, measured here"
    return (f"{head}; WARNING: it has never seen {hardware}'s data (trained on "
            f"{', '.join(trained_on) or 'nothing recorded'}) and ranks from hardware features "
            f"alone; `tenforge onboard --hardware {hardware}` measures and adapts one here")


def _best_registered(db: str, hardware: str) -> str | None:
    """best_model of the store at `db` (None: no store, or no model in it)."""
    if not Path(db).exists():
        return None
    with Store(db, read_only=True) as store:
        return best_model(store, hardware)


def shipped_choice(shipped: ShippedModel, hardware: str, asked: bool) -> str:
    """Why the shipped model tunes `hardware`: asked for, or the store has no model yet."""
    lineage = shipped.lineage
    top1 = lineage.get("metrics", {}).get("mean_network_top1", float("nan"))
    held = ", ".join(lineage.get("split", {}).get("holdout") or ()) or "none"
    trained = list(lineage.get("data_spec", {}).get("hardware") or ())
    why = "as asked" if asked else "shipped with tenforge; this store has no model of its own"
    seen = ("trained on its data" if hardware in trained else
            "it never saw this profile's data and ranks from hardware features alone "
            f"(`tenforge onboard --hardware {hardware}` adapts it here)")
    return (f"cost model {shipped.model_id} ({shipped.kind}): {why}; trained on "
            f"{', '.join(trained)}, "
            f"held-out networks ({held}) mean top-1 {top1:.3f}; {seen}")


def check_model_fits(store: Store, row: dict[str, Any], profile: HardwareProfile) -> None:
    """Refuse a model that cannot score this profile's candidates: other features, or trained
    only on another kind of target (a GPU model for a CPU, say)."""
    spec = json.loads(row["data_spec_json"])
    if spec.get("extractor") != FEATURE_EXTRACTOR:
        raise TenforgeError(f"model {row['model_id']} was trained on {spec.get('extractor')!r} "
                            f"features but tuning feeds {FEATURE_EXTRACTOR!r}; pick another "
                            f"model (`tenforge models`) or --cost-model {BASELINE}")
    if spec.get("asm"):  # models/ms_adapter.py would refuse it too, once the flow had started
        raise TenforgeError(f"model {row['model_id']} reads the assembly columns, a build per "
                            "candidate: it ranks stored candidates, not a search's; pick a "
                            f"model trained without asm_features or --cost-model {BASELINE} "
                            "(an asm model can re-order a model's top picks: --rerank-model)")
    names = list(spec.get("hardware") or [])
    kinds = queries.target_kinds(store, names)
    if kinds and profile.target_kind not in kinds:
        raise TenforgeError(f"model {row['model_id']} was trained on {', '.join(sorted(kinds))} "
                            f"targets only, not {profile.target_kind}; pick another model or "
                            f"--cost-model {BASELINE}")


def registered_model(store: Store, model_id: str) -> dict[str, Any]:
    """Model `model_id`'s row, its artifact known to be on disk: one-line errors for an
    unknown id or a missing artifact."""
    row = store.model_row(model_id)  # an unknown id fails here, in one line
    if not Path(row["path"]).exists():
        raise TenforgeError(f"model {model_id}'s artifact {row['path']} is missing; retrain it "
                            "or pick another model")
    return row


def rerank_artifact(db: str, model_id: str, profile: HardwareProfile,
                    instant_or_warm: bool) -> str:
    """The artifact of `db`'s model `model_id` as a re-rank model for `profile`, checked
    before any work (tasks.asm_rerank.checked_rerank_model): one-line errors also for a
    search that measures no model's picks first (`instant_or_warm` False)."""
    from tasks.asm_rerank import Rerank, checked_rerank_model

    if not instant_or_warm:
        raise TenforgeError("--rerank-model re-orders the learned model's picks before they are "
                            "measured: use it with --scheduler instant or a --warm-start")
    if not Path(db).exists():
        raise TenforgeError(f"store {db} does not exist, so it has no model {model_id!r}")
    with Store(db, read_only=True) as store:
        path = str(registered_model(store, model_id)["path"])
    checked_rerank_model(Rerank(path), profile)
    return path


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


def check_loadable(path: str) -> None:
    """Load the artifact once per process and file version: the CLI's validation and the
    flow's (same process) then pay one load, and the tuning run the other."""
    _loaded(path, Path(path).stat().st_mtime_ns)


@lru_cache(maxsize=4)
def _loaded(path: str, _mtime_ns: int) -> bool:
    from models.registry import load_model

    load_model(path)
    return True


def validate_retune(db: str | None, network: str, hardware: str, trials: int,
                    minutes: float | None, cost_model: str | None, scheduler: str,
                    flops_share: float, batch_size: int, seed: int,
                    population: int | None = None, out: str | None = None,
                    input_size: int | None = None, warm_start: int | None = None,
                    graph: str | None = None,
                    trials_per_round: int | None = None,
                    warm_samples: int | None = None,
                    hold_top: int | None = None,
                    rerank_model: str | None = None) -> RetuneSpec:
    """Check every retune parameter before any work; return them resolved (the cost model
    chosen, the profile's real name)."""
    from core.graphs import check_graph, default_graph, resolve_graph
    from tasks.network_registry import check_registrable
    from tasks.networks import ZOO
    from tasks.sources import resolve_workload
    from tasks.tuning import SCHEDULERS
    from tasks.tuning.checks import check_warm_samples, check_warm_start
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
    model_path = None
    choice = (f"cost model {BASELINE}: as asked" if cost_model == BASELINE else
              f"cost model {BASELINE}: no registered model (train one with `tenforge search` "
              "or `tenforge onboard`)")
    shipped = None
    registered = None if cost_model is not None else _best_registered(path, profile.name)
    if cost_model == SHIPPED:
        shipped = require_shipped_for(profile)
    elif cost_model is None and registered is None:
        shipped = shipped_for(profile)  # a fresh install: the model tenforge ships, if any
    if shipped is not None:
        choice = shipped_choice(shipped, profile.name, asked=cost_model == SHIPPED)
        model_path, cost_model = str(shipped.path), shipped.model_id
        check_loadable(model_path)
    elif cost_model != BASELINE:
        if not Path(path).exists():
            if cost_model is not None:
                raise TenforgeError(f"store {path} does not exist, so it has no model "
                                    f"{cost_model!r}; train one or use --cost-model {BASELINE}")
        else:
            with Store(path, read_only=True) as store:
                chosen = cost_model or registered
                if chosen is not None:
                    row = registered_model(store, chosen)
                    check_model_fits(store, row, profile)
                    model_path = row["path"]
                    check_loadable(model_path)  # a damaged artifact: refused here, not mid-run
                    choice = explain_choice(row, profile.name, asked=cost_model is not None,
                                            top1_here=queries.measured_top1(
                                                store, chosen, profile.name))
            cost_model = chosen
    if scheduler == "instant" and model_path is None:
        raise TenforgeError("the instant scheduler needs a learned model and this store has "
                            "none: `tenforge onboard` (or search / pretrain) first")
    check_warm_start(warm_start, model_path or "xgb", scheduler)
    warm_samples = check_warm_samples(warm_samples, warm_start)
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
                      hold_top=hold_top, rerank_model=rerank_model, rerank_path=rerank_path)


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
    from tasks.tuning.contexts import WARM_SAMPLES

    profile = resolve_profile(spec.hardware)
    work_dir = tuning_dir(spec.db) / tuning_id
    resumed = resume_from(spec.db, spec, tuning_id, work_dir, report)
    result = tune_network(spec.workload, profile, work_dir, spec.trials,
                          minutes=spec.minutes,
                          cost_model=spec.model_path or "xgb", scheduler=spec.scheduler,
                          flops_share=spec.flops_share, seed=spec.seed,
                          population=spec.population, warm_start=spec.warm_start,
                          warm_samples=spec.warm_samples or WARM_SAMPLES,
                          trials_per_iter=spec.trials_per_round, graph=spec.graph,
                          batch_size=spec.batch_size, input_size=spec.input_size,
                          hold_top=spec.hold_top, report=report, on_trials=on_trials,
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
