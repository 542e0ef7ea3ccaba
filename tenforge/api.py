"""What people script, as functions: `import tenforge` works from any directory.

    import tenforge
    tenforge.collect(["my_model.pt2"], candidates_per_task=8)
    summary = tenforge.retune("my_model.pt2", trials=64)
    manifest = tenforge.compile("my_model", out="my_model-tuned")
    with tenforge.open_store() as store:      # read-only; the README's queries work here
        print(store.query(sql))
    model = tenforge.cost_model()             # the best registered model, for MetaSchedule

Each flow function validates its request first (a `TenforgeError` naming what is wrong,
nothing written), then runs the same Prefect flow as the CLI (Prefect's ephemeral API unless
PREFECT_API_URL points at a server) and returns its summary. `db` defaults to $TENFORGE_DB or
the checkout's data/tenforge.duckdb, as on the command line.

The project's floors (core, storage, models, tasks, flows) are folders of the checkout, not
installed packages: the first call puts the checkout on sys.path (tenforge.cli.bootstrap),
ahead of the caller's own folders, so a script's own `models` package cannot shadow them.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence


def _ready() -> None:
    """The checkout on sys.path, and no foreign module already imported under a floor's name."""
    from tenforge.cli import PROJECT_ROOT, bootstrap

    bootstrap()
    for floor in ("core", "storage", "models", "tasks", "flows"):
        module = sys.modules.get(floor)
        where = getattr(module, "__file__", None) or ""
        if module is not None and not where.startswith(str(PROJECT_ROOT)):
            from core.errors import TenforgeError

            raise TenforgeError(f"a module named {floor!r} from {where or 'elsewhere'} was "
                                "imported before tenforge's own; import tenforge first, or "
                                "rename yours")


def collect(networks: Sequence[str], hardware: str = "local", candidates_per_task: int = 16,
            seed: int = 0, batch_size: int = 1, measure_batch: int = 16,
            db: str | None = None) -> dict[str, Any]:
    """Measure sampled candidates of `networks` (zoo or registered names, or files) here."""
    _ready()
    from tasks.collect import validate_collect

    spec = validate_collect(db, hardware, list(networks), candidates_per_task, seed,
                            batch_size, measure_batch)
    from flows.collect import collect as flow

    return flow(hardware=hardware, networks=list(networks),
                candidates_per_task=candidates_per_task, seed=seed, batch_size=batch_size,
                db=spec.db, measure_batch=measure_batch, outbox=spec.outbox)


def search(hardware: Sequence[str] | None = None, trials: int = 20,
           db: str | None = None, **options: Any) -> dict[str, Any]:
    """Optuna's search over cost-model families; registers the winner (flows/search.py
    documents `options`: split, holdout, families, metric, time_budget_s, ...)."""
    _ready()
    from flows.search import search as flow

    return flow(hardware=list(hardware) if hardware else None, trials=trials, db=db, **options)


def pretrain(hardware: Sequence[str] | None = None, family: str = "mlp",
             db: str | None = None, **options: Any) -> dict[str, Any]:
    """Pre-train a model on source profiles' data (flows/transfer.py: pretrain)."""
    _ready()
    from flows.transfer import pretrain as flow

    return flow(hardware=list(hardware) if hardware else None, family=family, db=db, **options)


def transfer(hardware: str = "local", parent: str | None = None, samples: int = 200,
             strategy: str = "full", db: str | None = None,
             **options: Any) -> dict[str, Any]:
    """Adapt a pre-trained model to `hardware` from a few of its measurements."""
    _ready()
    from flows.transfer import transfer as flow

    return flow(parent=parent, hardware=hardware, samples=samples, strategy=strategy, db=db,
                **options)


def retune(network: str, hardware: str = "local", trials: int = 64,
           minutes: float | None = None, cost_model: str | None = None,
           out: str | None = None, db: str | None = None, **options: Any) -> dict[str, Any]:
    """Tune `network` (a zoo or registered name, or FILE.py:FACTORY / FILE.pt2 / FILE.onnx)
    with the best learned cost model; `out` also writes a deployable folder."""
    _ready()
    from tasks.retune import validate_retune

    checked = {k: v for k, v in options.items() if k != "force"}  # the flow's own switch
    validate_retune(db, network, hardware, trials, minutes, cost_model,
                    checked.pop("scheduler", "gradient"), checked.pop("flops_share", 0.9),
                    checked.pop("batch_size", 1), checked.pop("seed", 0), out=out, **checked)
    from flows.retune import retune as flow

    return flow(network=network, hardware=hardware, trials=trials, minutes=minutes,
                cost_model=cost_model, out=out, db=db, **options)


def compile(network: str, out: str, hardware: str = "local", tuning_id: str | None = None,
            db: str | None = None) -> dict[str, Any]:
    """The tuned network as a deployable folder (model.so, params.bin, manifest.json,
    run_model.py); returns the manifest."""
    _ready()
    from tasks.deploy import compile_deployable, validate_compile

    return compile_deployable(validate_compile(db, network, hardware, tuning_id, out),
                              report=lambda _: None)


def open_store(db: str | None = None) -> Any:
    """The store, read-only (`with tenforge.open_store() as s: s.query(SQL)`)."""
    _ready()
    from pathlib import Path

    from core.errors import TenforgeError
    from storage.store import Store
    from tasks.validation import check_db_path

    path = check_db_path(db)
    if not Path(path).exists():
        raise TenforgeError(f"store {path} does not exist; run a collect or the pipeline first")
    return Store(path, read_only=True)


def cost_model(model_id: str | None = None, hardware: str = "local",
               db: str | None = None) -> Any:
    """A registered model (default: the best for `hardware`) as a MetaSchedule cost model:
    pass it as `cost_model=` to MetaSchedule's tune_tir / tune_relax. As in retune, its refits
    also fit an online model on what the search measured, weighed per task as retune weighs it
    (tasks.tuning.run.ONLINE_HALF, ONLINE_BLEND)."""
    _ready()
    from core.errors import TenforgeError
    from models.ms_adapter import learned_cost_model
    from tasks.hardware import resolve_profile
    from tasks.retune_model import best_model, check_model_fits
    from tasks.tuning.run import ONLINE_BLEND, ONLINE_HALF

    profile = resolve_profile(hardware)
    with open_store(db) as store:
        chosen = model_id or best_model(store, profile.name)
        if chosen is None:
            raise TenforgeError("the store has no registered model; train one (tenforge.search "
                                "or `tenforge onboard`)")
        row = store.model_row(chosen)
        check_model_fits(store, row, profile)
    return learned_cost_model(row["path"], profile, online=ONLINE_HALF, blend=ONLINE_BLEND)
