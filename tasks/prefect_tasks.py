"""Prefect @task wrappers over tasks.collect: keys and small values in and out, never arrays,
models or connections. Each resolves the hardware profile by name itself."""

from __future__ import annotations

from prefect import get_run_logger, task

from tasks import collect
from tasks.hardware import resolve_profile
from tasks.retune import RetuneSpec
from tasks.sources import Workload


@task(name="import-network", tags=["tvm"], task_run_name="import {workload.name}")
def import_network(db: str, hardware: str, workload: Workload, batch_size: int,
                   input_size: int | None = None, graph: str = "exported",
                   reuse_stored: bool = False) -> list[int]:
    """Import a network into TVM (prepared as `graph`) and store its tuning tasks; returns
    task ids (`reuse_stored`: those the store lists already, if it does)."""
    return collect.register_network(db, resolve_profile(hardware), workload, batch_size,
                                    input_size, graph, reuse_stored)


@task(name="sample-candidates", tags=["tvm"], task_run_name="sample {count} for task {task_id}")
def sample_candidates(db: str, hardware: str, task_id: int, count: int, seed: int,
                      simt: bool = False) -> dict:
    return collect.sample_task(db, resolve_profile(hardware), task_id, count, seed, simt)


@task(name="measure-candidates", tags=["tvm", "measure"], task_run_name="measure on {hardware}")
def measure_candidates(db: str, hardware: str, task_ids: list[int], measure_batch: int,
                       flow_run_id: str | None, asm: bool = False) -> dict:
    """Build and run every stored candidate of these tasks that lacks a measurement."""
    from tasks.artifacts import progress_reporter

    logger = get_run_logger()
    return collect.measure_pending(
        db, resolve_profile(hardware), task_ids, measure_batch, flow_run_id, report=logger.info,
        on_progress=progress_reporter("collect-progress", f"{hardware}: candidates measured"),
        keep_asm=asm)


@task(name="record-run")
def record_run(db: str, run_id: str, flow: str, parameters: dict, hardware: str | None,
               status: str, summary: dict | None = None) -> None:
    """Start (summary None) or finish a row in the store's `runs` table (provenance). The
    first write of every flow: the default data/ folder is made here, not in validation."""
    from core.paths import tenforge_version
    from core.tvm_env import tvm_version
    from storage.store import Store
    from tasks.hardware import this_host
    from tasks.validation import prepare_db_path

    with Store(prepare_db_path(db)) as store:
        if summary is None:
            store.start_run(run_id, flow, parameters, hardware=hardware, host=this_host(),
                            tvm_version=tvm_version(), tenforge_version=tenforge_version())
        else:
            store.finish_run(run_id, status, summary)


@task(name="load-seed")
def load_seed_if_empty(db: str) -> dict:
    """Load the shipped seed dataset into `db` when it holds no measurements yet (a new user
    can train cost models at once); a store with data is left alone."""
    from storage.queries import measurement_count
    from storage.seed import SEED_DIR, load_shards
    from storage.store import Store
    from tasks.validation import prepare_db_path

    logger = get_run_logger()
    with Store(prepare_db_path(db)) as store:  # the pipeline's first write
        existing = measurement_count(store)
    if existing:
        logger.info(f"store has {existing} measurements: seed dataset not loaded")
        return {"loaded": False, "existing": existing}
    if not SEED_DIR.is_dir():
        logger.warning(f"no seed dataset at {SEED_DIR}: starting from an empty store")
        return {"loaded": False, "existing": 0}
    summary = load_shards(db, SEED_DIR, progress=logger.info)
    return {"loaded": True, **summary}


@task(name="export-shard", retries=1)
def export_run_shard(db: str, run_id: str, outbox: str) -> list[str]:
    """Write this run's measurements as a shard into the machine's outbox (the fleet's central
    store ingests it from there)."""
    from storage.seed_export import OUTBOX_COMPRESSION, export_shards

    written = export_shards(db, outbox, run_ids=[run_id], compression_level=OUTBOX_COMPRESSION)
    get_run_logger().info(f"exported {len(written)} shard(s) to {outbox}")
    return [f"{s.hardware}/{s.stem}" for s in written]


@task(name="ingest-shards", tags=["store"])
def ingest_shards(db: str, sources: list[str]) -> dict:
    """Load the shards under `sources` that the store has not ingested yet."""
    from storage.ingest import ingest_shards as load

    return load(db, sources, progress=get_run_logger().info)


@task(name="search-models", tags=["train"], task_run_name="optuna search")
def search_models(db: str, data_spec: dict, split_spec: dict, search_spec: dict,
                  study_name: str | None, flow_run_id: str | None) -> dict:
    """Run (or continue) the Optuna study; every trial is copied into the store."""
    from tasks.training import run_study

    return run_study(db, data_spec, split_spec, search_spec, study_name, flow_run_id,
                     log=get_run_logger().info)


@task(name="train-and-register", tags=["train"], task_run_name="train {family} and register")
def train_and_register(db: str, data_spec: dict, split_spec: dict, family: str, params: dict,
                       seed: int, study_name: str | None, trial_number: int | None,
                       flow_run_id: str | None, register_if_better: bool = False) -> dict:
    from tasks import training

    return training.train_and_register(db, data_spec, split_spec, family, params, seed,
                                       study_name, trial_number, flow_run_id,
                                       log=get_run_logger().info,
                                       register_if_better=register_if_better)


@task(name="pretrain", tags=["train"], task_run_name="pre-train on {hardware}")
def pretrain(db: str, hardware: list[str], networks: list[str], family: str | None,
             params: dict, from_model: str | None, seed: int, flow_run_id: str | None,
             holdout: tuple[str, ...] = (), register_if_better: bool = False) -> dict:
    from tasks import training

    return training.pretrain(db, hardware, networks, family, params, from_model, seed,
                             flow_run_id, log=get_run_logger().info, holdout=holdout,
                             register_if_better=register_if_better)


@task(name="transfer", tags=["train"], task_run_name="transfer to {hardware} ({strategy})")
def transfer(db: str, parent_model_id: str, hardware: str, samples: int | None, strategy: str,
             networks: list[str], seed: int, flow_run_id: str | None,
             baseline: str | None = None) -> dict:
    from tasks import training

    return training.transfer(db, parent_model_id, hardware, samples, strategy, networks, seed,
                             flow_run_id, log=get_run_logger().info, baseline=baseline)


@task(name="stage-calibration", tags=["store"], task_run_name="calibration set for {hardware}")
def stage_calibration(db: str, hardware: str, candidates: int) -> list[int]:
    """Choose the calibration candidates and store them for `hardware`; returns task ids."""
    from tasks import onboard

    chosen = onboard.choose_calibration(db, hardware, resolve_profile(hardware).target_kind,
                                        candidates)
    get_run_logger().info(f"calibration: {sum(len(c['candidate_ids']) for c in chosen)} "
                          f"candidates over {len(chosen)} tasks")
    return onboard.stage_calibration(db, hardware, chosen)


@task(name="network-hash", tags=["tvm"], task_run_name="import {workload.name}")
def network_hash(workload: Workload, batch_size: int, input_size: int,
                 graph: str = "exported") -> str:
    """Structural hash of the network as TVM imports it (did the network change?)."""
    from tasks.retune import network_hash as compute

    return compute(workload, batch_size, input_size, graph)


@task(name="register-workload", tags=["tvm"], task_run_name="register {workload.name}")
def register_workload(db: str, workload: Workload, hardware: str) -> None:
    """A user's file used directly: registered under its name (unless already, unchanged)."""
    from tasks.network_registry import ensure_registered

    ensure_registered(db, workload, resolve_profile(hardware).target)


@task(name="tune-network", tags=["tvm", "measure"],
      task_run_name="tune {spec.network} on {spec.hardware}")
def tune_network(spec: RetuneSpec, tuning_id: str) -> dict:
    """Tune with MetaSchedule driven by the chosen cost model, measure end to end, store it."""
    from tasks.artifacts import progress_reporter
    from tasks.retune import run_retune

    progress = progress_reporter("retune-progress", f"{spec.network} on {spec.hardware}: "
                                 f"trials measured of {spec.trials}")
    result = run_retune(spec, tuning_id, report=get_run_logger().info,
                        on_trials=lambda done: progress(done, spec.trials))
    progress(spec.trials, spec.trials)  # done, also when a time budget ended it early
    return result


@task(name="compile-library", tags=["tvm"],
      task_run_name="compile {network} with tuning {tuning_id}")
def compile_library(db: str, network: str, hardware: str, tuning_id: str, out: str) -> dict:
    """The tuned network as a deployable folder (tasks/deploy.py); returns its manifest."""
    from tasks.deploy import compile_deployable, validate_compile

    spec = validate_compile(db, network, hardware, tuning_id, out)
    return compile_deployable(spec, report=get_run_logger().info)


@task(name="skip-check", task_run_name="unchanged since the last retune?")
def unchanged_tuning(spec: RetuneSpec, network_hash: str) -> dict | None:
    """The last tuning run when network, profile, cost model and budget are all unchanged."""
    from tasks.retune import unchanged_since_last

    return unchanged_since_last(spec, network_hash)


@task(name="has-measurements")
def has_measurements(db: str, hardware: str) -> bool:
    from tasks.onboard import has_measurements as check

    return check(db, hardware)


@task(name="choose-parent", task_run_name="pre-trained model for {hardware}")
def default_parent(db: str, hardware: str) -> str | None:
    """The newest pre-trained model that never saw `hardware` (None: there is none)."""
    from tasks.onboard import default_parent as choose

    return choose(db, hardware)


@task(name="shipped-parent", task_run_name="shipped model for {hardware}")
def shipped_parent(db: str, hardware: str, asked: bool = False) -> str | None:
    """The shipped model for this CPU, registered in the store (None: none ships for it)."""
    from tasks.onboard import shipped_parent as choose

    return choose(db, hardware, asked)


@task(name="source-profiles")
def source_profiles(db: str, hardware: str, chosen: list[str] | None = None) -> list[str]:
    """Every other profile with measurements of `hardware`'s target kind (tasks.training), or
    the `chosen` ones (checked by tasks.pipeline.check_sources before any work)."""
    from tasks.training import source_profiles_for

    return list(chosen) if chosen else source_profiles_for(db, hardware)


@task(name="model-for-tuning", task_run_name="model retune would use on {hardware}")
def model_for_tuning(db: str, hardware: str) -> str | None:
    from tasks.onboard import model_for_tuning as choose

    return choose(db, hardware)
