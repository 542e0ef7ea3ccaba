"""`tenforge ...`: the things people do by hand (run a flow, import/export data, query, list).

Imports are lazy: TVM, torch and Prefect take seconds to import, and `--help` or a bad
argument should answer at once. Errors the user can fix print one line and exit with 2.
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path

from core.errors import TenforgeError

PROJECT_ROOT = Path(__file__).resolve().parents[1]

ENV_DEFAULTS = {
    # Prefect: no telemetry, and a patient ephemeral API start on a busy 2-core machine (FACTS.md).
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "60",
    # OpenMP threads that spin while waiting starve each other when the cores are busy (a
    # collect running beside training): XGBoost's 60-round fit took 8.0 s instead of 1.1 s.
    # Must be set before libgomp loads, hence here.
    "OMP_WAIT_POLICY": "passive",
}


def bootstrap() -> None:
    """Put the project root on sys.path and set environment defaults (idempotent)."""
    if not (PROJECT_ROOT / "flows").is_dir():
        raise SystemExit(f"tenforge: error: project folders not found next to {PROJECT_ROOT}; "
                         "install tenforge with `pip install -e .` from its checkout")
    if str(PROJECT_ROOT) not in sys.path:
        sys.path.insert(0, str(PROJECT_ROOT))
    for key, value in ENV_DEFAULTS.items():
        os.environ.setdefault(key, value)
    # torch.export's pytree and TVM's frontends warn loudly about their own internals.
    warnings.filterwarnings("ignore", category=FutureWarning)
    warnings.filterwarnings("ignore", category=DeprecationWarning)


# models.transfer.STRATEGIES, spelled out so `--help` answers without importing torch
# (tests/models/test_transfer.py keeps the two equal).
TRANSFER_STRATEGIES = ["full", "head", "residual", "multi_head"]


def _networks(value: str) -> list[str]:
    return [n.strip() for n in value.split(",") if n.strip()]


def _positive(value: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}") from None
    if number < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {number}")
    return number


# ----------------------------------------------------------------------------- commands


def cmd_collect(args: argparse.Namespace) -> int:
    from tasks.collect import check_outbox, prepare_db_path, validate_collect

    validate_collect(args.hardware, args.networks, args.candidates, args.batch_size,
                     args.measure_batch)  # before Prefect starts: fast, clean errors
    check_outbox(args.outbox)
    db = str(prepare_db_path(args.db))
    from flows.collect import collect

    collect(hardware=args.hardware, networks=args.networks, candidates_per_task=args.candidates,
            seed=args.seed, batch_size=args.batch_size, db=db, measure_batch=args.measure_batch,
            outbox=args.outbox)
    return 0


def cmd_pipeline(args: argparse.Namespace) -> int:
    from tasks.collect import prepare_db_path, validate_collect

    validate_collect(args.hardware, args.networks, args.candidates, 1)
    db = str(prepare_db_path(args.db))
    from flows.pipeline import pipeline

    pipeline(hardware=args.hardware, networks=args.networks,
             candidates_per_task=args.candidates, seed=args.seed, db=db)
    return 0


def cmd_hardware(args: argparse.Namespace) -> int:
    from storage.reports import format_table
    from tasks.constraints import isa_family
    from tasks.hardware import ALIASES, all_profiles, profile_name

    aliases = {profile_name(a): a for a in reversed(ALIASES)}
    rows = [((f"{aliases[p.name]} = " if p.name in aliases else "") + p.name, p.target_kind,
             isa_family(p.target_kind, p.features), p.runner_kind, p.num_threads,
             p.description) for p in all_profiles().values()]
    print(format_table(["profile", "kind", "ISA", "runner", "threads", "description"], rows))
    return 0


def cmd_networks(args: argparse.Namespace) -> int:
    from storage.reports import format_table
    from tasks.networks import ZOO

    print(format_table(["network", "default size", "description"],
                       [(d.name, d.default_size, d.description) for d in ZOO.values()]))
    return 0


def cmd_query(args: argparse.Namespace) -> int:
    from storage.queries import user_query
    from storage.reports import format_table
    from storage.store import Store

    with Store(args.db, read_only=True) as store:
        columns, rows = user_query(store, args.sql)
    if columns:
        print(format_table(columns, rows))
    return 0


def cmd_import_ms(args: argparse.Namespace) -> int:
    from storage.ms_database import import_ms
    from tasks.collect import prepare_db_path
    from tasks.hardware import resolve_profile

    summary = import_ms(args.work_dir, resolve_profile(args.hardware), str(prepare_db_path(args.db)))
    print(f"imported {summary['records']} records ({summary['new_measurements']} new "
          f"measurements) of {summary['workloads']} workloads into {args.db}")
    return 0


def cmd_export_ms(args: argparse.Namespace) -> int:
    from storage.ms_database import export_ms
    from tasks.hardware import profile_name

    summary = export_ms(args.db, profile_name(args.hardware), args.work_dir)
    print(f"exported {summary['records']} records of {summary['workloads']} workloads to "
          f"{args.work_dir}")
    return 0


def cmd_dataset_load_seed(args: argparse.Namespace) -> int:
    from storage.seed import load_shards
    from tasks.collect import prepare_db_path
    from tasks.hardware import profile_names

    summary = load_shards(str(prepare_db_path(args.db)), args.source,
                          profile_names(args.hardware))
    print(f"loaded {summary['shards']} seed shards ({summary['measurements_added']} new "
          f"measurements) into {summary['db']} in {summary['seconds']} s")
    return 0


def cmd_dataset_export_seed(args: argparse.Namespace) -> int:
    from storage.seed import export_shards

    written = export_shards(args.db, args.out, include_running=args.include_running)
    for shard in written:
        print(f"wrote {args.out}/{shard.hardware}/{shard.stem}: {shard.network}, "
              f"{shard.measured} measurements ({shard.errors} errors)")
    print(f"{len(written)} new shards")
    return 0


DATASHEET_BEGIN = "<!-- generated by `./run dataset info --datasheet docs/seed-dataset.md` -->"
DATASHEET_END = "<!-- end generated -->"


def cmd_dataset_info(args: argparse.Namespace) -> int:
    from storage.reports import format_table
    from storage.seed import datasheet_rows, seed_totals

    rows = datasheet_rows(args.source)
    totals = seed_totals(args.source)
    total = ("total", f"{totals['networks']} networks", sum(r[2] for r in rows),
             totals["tasks"], sum(r[4] for r in rows),
             sum(r[5] for r in rows), min(r[6] for r in rows), max(r[7] for r in rows))
    header = ["hardware", "network", "shards", "tasks", "measured", "errors", "from", "to"]
    from storage.reports import markdown_table

    table = (markdown_table if args.markdown or args.datasheet else format_table)(
        header, [*rows, total])
    text = (f"{table}\n\n{totals['succeeded']} measured successfully over {totals['tasks']} "
            f"distinct tasks of {totals['networks']} networks on {totals['profiles']} profiles; "
            f"{totals['bytes'] / 2**20:.1f} MiB on disk")
    if args.datasheet:  # replace the generated block between the two markers
        doc = Path(args.datasheet)
        head, _, rest = doc.read_text().partition(DATASHEET_BEGIN)
        _, found, tail = rest.partition(DATASHEET_END)
        if not found:
            raise TenforgeError(f"{doc} has no '{DATASHEET_BEGIN}' ... '{DATASHEET_END}' block")
        doc.write_text(f"{head}{DATASHEET_BEGIN}\n{text}\n{DATASHEET_END}{tail}")
    print(text)
    return 0


def cmd_search(args: argparse.Namespace) -> int:
    from tasks.collect import prepare_db_path
    from tasks.training import validate_search

    db = str(prepare_db_path(args.db))
    validate_search(db, args.hardware, args.networks, args.split, args.holdout, args.families,
                    args.trials, args.time_budget, args.metric, args.multi_objective, args.seed,
                    args.max_epochs, args.study)  # before Prefect starts: fast, clean errors
    from flows.search import search

    search(hardware=args.hardware, networks=args.networks, split=args.split,
           holdout=args.holdout, families=args.families, trials=args.trials,
           time_budget_s=args.time_budget, metric=args.metric,
           multi_objective=args.multi_objective, seed=args.seed, max_epochs=args.max_epochs,
           study=args.study, db=db)
    return 0


def _json_object(value: str) -> dict:
    import json

    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {value!r} ({exc.msg})")
    if not isinstance(parsed, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"hidden\": 64}}', "
                                         f"got {value!r}")
    return parsed


def cmd_pretrain(args: argparse.Namespace) -> int:
    from tasks.training import validate_pretrain

    validate_pretrain(args.db, args.hardware, args.family, args.params, args.from_model,
                      args.networks)
    from flows.transfer import pretrain

    pretrain(hardware=args.hardware, family=args.family, params=args.params,
             from_model=args.from_model, networks=args.networks, seed=args.seed, db=args.db)
    return 0


def cmd_transfer(args: argparse.Namespace) -> int:
    from tasks.training import validate_transfer

    validate_transfer(args.db, args.parent, args.hardware, args.samples, args.strategy,
                      args.networks, args.seed)
    from flows.transfer import transfer

    transfer(parent=args.parent, hardware=args.hardware, samples=args.samples,
             strategy=args.strategy, networks=args.networks, seed=args.seed, db=args.db)
    return 0


def cmd_retune(args: argparse.Namespace) -> int:
    from tasks.retune import validate_retune

    params = dict(network=args.network, hardware=args.hardware, trials=args.trials,
                  minutes=args.minutes, cost_model=args.cost_model, scheduler=args.scheduler,
                  flops_share=args.flops_share, batch_size=args.batch_size, seed=args.seed,
                  population=args.population)
    validate_retune(args.db, **params)
    from flows.retune import retune

    retune(**params, force=args.force, db=args.db)
    return 0


def cmd_onboard(args: argparse.Namespace) -> int:
    from tasks.onboard import validate_onboard

    validate_onboard(args.db, args.hardware, args.candidates, args.parent, args.strategy)
    from flows.onboard import onboard

    onboard(hardware=args.hardware, candidates=args.candidates, parent=args.parent,
            family=args.family, strategy=args.strategy, seed=args.seed, db=args.db)
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from storage.ingest import check_new_shards
    from tasks.collect import prepare_db_path
    from tasks.ingest import default_inbox, validate_sources

    sources = validate_sources(args.sources or default_inbox())
    db = str(prepare_db_path(args.db))
    check_new_shards(db, sources)  # a damaged or newer shard: one line, before Prefect starts
    from flows.ingest import ingest

    ingest(sources=sources, db=db)
    return 0


def cmd_service(args: argparse.Namespace) -> int:
    from tenforge import service

    if args.action == "start":
        service.start(host=args.host, port=args.port, deploy=not args.no_deploy,
                      profiles=args.profiles)
    elif args.action == "join":
        if not args.api:
            raise TenforgeError("service join needs --api http://SERVER:4200/api (the server "
                                "machine's `tenforge service status` prints it)")
        service.join(args.api, profiles=args.profiles, deploy=not args.no_deploy)
    elif args.action == "deployments":
        from tenforge.deployments import machine_deployments, machine_profiles, write_prefect_file

        spec = machine_deployments(machine_profiles(args.profiles))
        if args.write:
            print(f"wrote {write_prefect_file(spec, Path(args.write))}")
        for d in spec["deployments"]:
            print(f"{d['name']:<40} pool {d['work_pool']['name']:<28} {d['entrypoint']}")
    elif args.action == "stop":
        service.stop()
    else:
        print(service.status())
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from tasks.training import study_storage
    from tenforge.service import check_port_free

    journal = study_storage(args.db)
    if not journal.exists():
        raise TenforgeError(f"no search studies next to {args.db} yet ({journal} is missing); "
                            "run `tenforge search` first")
    check_port_free(args.host, args.port)
    print(f"Optuna dashboard for {journal}: http://{args.host}:{args.port} (Ctrl-C stops it)",
          flush=True)
    from optuna_dashboard._cli import main as dashboard

    sys.argv = ["optuna-dashboard", "--host", args.host, "--port", str(args.port),
                "--storage-class", "JournalFileStorage", str(journal)]
    dashboard()
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from storage.reports import store_report
    from tasks.hardware import profile_name

    print(store_report(args.db, markdown=args.markdown,
                       hardware=profile_name(args.hardware) if args.hardware else None), end="")
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from storage.reports import model_leaderboard
    from tasks.hardware import profile_name

    print(model_leaderboard(args.db, hardware=profile_name(args.hardware) if args.hardware
                            else None))
    return 0


# ----------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus where to look) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from tasks.collect import default_db

    parser = _Parser(prog="tenforge", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def db_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=default_db(),
                       help="DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb)")

    p = sub.add_parser("collect", help="measure candidates of networks on a hardware profile")
    p.add_argument("--hardware", default="local", help="profile name (`tenforge hardware`)")
    p.add_argument("--networks", type=_networks, default=["mlp", "tiny_cnn"],
                   help="comma-separated zoo networks (`tenforge networks`)")
    p.add_argument("--candidates", type=_positive, default=8, help="candidates per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=_positive, default=1)
    p.add_argument("--measure-batch", type=_positive, default=16,
                   help="candidates built together before being run")
    p.add_argument("--outbox", default=None,
                   help="export this run's shard to this folder, for a central store to "
                        "ingest (default: $TENFORGE_OUTBOX; unset = no export)")
    db_option(p)
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("onboard", help="first contact with a profile: measure a calibration "
                                       "set, fine-tune a pre-trained model, report accuracy")
    p.add_argument("--hardware", default="local", help="profile name (`tenforge hardware`)")
    p.add_argument("--candidates", type=_positive, default=256,
                   help="calibration set size (12 per task)")
    p.add_argument("--parent", default=None, help="pre-trained model id to fine-tune (default: "
                                                  "the newest one that never saw this profile)")
    p.add_argument("--family", default="xgb",
                   help="family to pre-train when the store has no pre-trained model")
    p.add_argument("--strategy", default="residual",
                   choices=TRANSFER_STRATEGIES,
                   help="fine-tuning strategy (residual: frozen model + a small model of its "
                        "errors)")
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=cmd_onboard)

    p = sub.add_parser("ingest", help="load the shards other machines exported into this store "
                                      "(checksummed, idempotent, resumable)")
    p.add_argument("sources", nargs="*", help="folders with exported shards (default: "
                                              "$TENFORGE_INBOX or data/inbox)")
    db_option(p)
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("pipeline", help="the main job on embedded defaults")
    p.add_argument("--hardware", default="local")
    p.add_argument("--networks", type=_networks, default=["mlp", "tiny_cnn"])
    p.add_argument("--candidates", type=_positive, default=4)
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=cmd_pipeline)

    p = sub.add_parser("hardware", help="list hardware profiles")
    p.set_defaults(func=cmd_hardware)
    p = sub.add_parser("networks", help="list zoo networks")
    p.set_defaults(func=cmd_networks)

    p = sub.add_parser("query", help="run SQL on the store (read-only)")
    p.add_argument("sql")
    db_option(p)
    p.set_defaults(func=cmd_query)

    p = sub.add_parser("import-ms", help="load a MetaSchedule JSON database into the store")
    p.add_argument("work_dir", help="folder with database_workload.json and "
                                    "database_tuning_record.json")
    p.add_argument("--hardware", required=True, help="profile the records were measured on")
    db_option(p)
    p.set_defaults(func=cmd_import_ms)

    p = sub.add_parser("export-ms", help="write a hardware's measurements as a MetaSchedule "
                                         "JSON database")
    p.add_argument("work_dir")
    p.add_argument("--hardware", required=True)
    db_option(p)
    p.set_defaults(func=cmd_export_ms)

    p = sub.add_parser("search", help="Optuna search for the best cost model on held-out tasks")
    p.add_argument("--hardware", type=_networks, default=None,
                   help="comma-separated profiles (default: all in the store)")
    p.add_argument("--networks", type=_networks, default=None, help="only these networks' tasks")
    p.add_argument("--split", default="by_task",
                   choices=["within_task", "by_task", "by_target", "by_network"])
    p.add_argument("--holdout", type=_networks, default=None,
                   help="hardware (by_target) or networks (by_network) to test on")
    p.add_argument("--families", type=_networks, default=None,
                   help="comma-separated: xgb,lgbm,mlp,attention,bilstm_attention")
    p.add_argument("--trials", type=_positive, default=20, help="total trials of the study")
    p.add_argument("--time-budget", type=float, default=900.0, help="seconds")
    p.add_argument("--metric", default="peak1", choices=["peak1", "peak5", "pairwise",
                                                         "avg_peak5"])
    p.add_argument("--multi-objective", action="store_true",
                   help="also maximize pairwise accuracy and minimize training time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-epochs", type=_positive, default=30)
    p.add_argument("--study", default=None, help="study name (a re-run continues it)")
    db_option(p)
    p.set_defaults(func=cmd_search)

    p = sub.add_parser("pretrain", help="train one model across source hardware profiles")
    p.add_argument("--hardware", type=_networks, default=None,
                   help="comma-separated source profiles (default: all in the store)")
    p.add_argument("--family", default="mlp", help="model family (see `tenforge search -h`)")
    p.add_argument("--params", type=_json_object, default=None,
                   help="hyperparameters as JSON, e.g. '{\"hidden\": 64}'")
    p.add_argument("--from-model", default=None,
                   help="reuse a registered model's kind and configuration (the search winner)")
    p.add_argument("--networks", type=_networks, default=None)
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=cmd_pretrain)

    p = sub.add_parser("transfer", help="fine-tune a registered model to a target profile")
    p.add_argument("parent", nargs="?", default=None,
                   help="model id of the pre-trained model (default: the newest pre-trained)")
    p.add_argument("--hardware", default="local", help="target profile")
    p.add_argument("--samples", type=_positive, default=200,
                   help="target measurements to fine-tune on")
    p.add_argument("--all-samples", dest="samples", action="store_const", const=None,
                   help="fine-tune on every target measurement of the training tasks")
    p.add_argument("--strategy", default="full",
                   choices=TRANSFER_STRATEGIES)
    p.add_argument("--networks", type=_networks, default=None)
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=cmd_transfer)

    from tasks.tuning import SCHEDULERS

    p = sub.add_parser("retune", help="tune a network with the best learned cost model and "
                                      "measure its end-to-end latency")
    p.add_argument("network", help="a zoo network (`tenforge networks`)")
    p.add_argument("--hardware", default="local", help="hardware profile")
    p.add_argument("--trials", type=_positive, default=64, help="measured candidates in all")
    p.add_argument("--minutes", type=float, default=None,
                   help="wall-clock budget of the search (default: none)")
    p.add_argument("--cost-model", default=None,
                   help="registered model id, or metaschedule-xgb (default: the best "
                        "registered model for this hardware)")
    p.add_argument("--scheduler", default="gradient", choices=SCHEDULERS,
                   help="task scheduler: gradient (MetaSchedule's), round-robin, gain "
                        "(tenforge's expected gain), dual (gain per task and design space), "
                        "instant (no search: per task rank --population sampled candidates "
                        "with the learned model, measure the top trials/tasks)")
    p.add_argument("--flops-share", type=float, default=0.9,
                   help="tune the tasks that carry this share of FLOPs x occurrences")
    p.add_argument("--population", type=_positive, default=256,
                   help="evolutionary search population per round (smaller: faster rounds)")
    p.add_argument("--batch-size", type=_positive, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true",
                   help="tune even if nothing changed since the last run")
    db_option(p)
    p.set_defaults(func=cmd_retune)

    p = sub.add_parser("service", help="the service: Prefect server + UI, and for each hardware "
                                       "profile of this machine a work pool, its deployments "
                                       "and a worker")
    p.add_argument("action", choices=["start", "join", "stop", "status", "deployments"],
                   help="start: server + this machine; join: add this machine to a server "
                        "elsewhere (--api); deployments: list (or --write) this machine's")
    p.add_argument("--host", default="127.0.0.1", help="address of the server (and UI)")
    p.add_argument("--port", type=_positive, default=4200)
    p.add_argument("--api", default=None, help="join: the server's API, http://HOST:4200/api")
    p.add_argument("--profiles", type=_networks, default=None,
                   help="comma-separated profiles to serve (default: every profile this "
                        "machine can run, `tenforge hardware`)")
    p.add_argument("--write", default=None, help="deployments: write them as a prefect.yaml")
    p.add_argument("--no-deploy", action="store_true",
                   help="start server, pools and workers, but do not (re)deploy")
    p.set_defaults(func=cmd_service)

    p = sub.add_parser("dashboard", help="Optuna's dashboard for the store's search studies")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_positive, default=8080)
    db_option(p)
    p.set_defaults(func=cmd_dashboard)

    p = sub.add_parser("report", help="what the store holds: measurements, best latencies, "
                                      "model leaderboard, tuning history")
    p.add_argument("--markdown", action="store_true", help="Markdown instead of plain text")
    p.add_argument("--hardware", default=None, help="only this profile (`local` ok)")
    db_option(p)
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("models", help="registered cost models, what they were trained on, and "
                                      "their held-out metrics")
    p.add_argument("--hardware", default=None,
                   help="only models whose training data includes this profile (`local` ok)")
    db_option(p)
    p.set_defaults(func=cmd_models)

    from storage.seed import SEED_DIR

    p = sub.add_parser("dataset", help="the shipped seed dataset: load, export, describe")
    dsub = p.add_subparsers(dest="dataset_command", required=True, parser_class=_Parser)
    p = dsub.add_parser("load-seed", help="load the seed dataset into a store (any store: "
                                          "rows already there are kept)")
    p.add_argument("--from", dest="source", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--hardware", type=_networks, default=None,
                   help="comma-separated profiles to load (default: all)")
    db_option(p)
    p.set_defaults(func=cmd_dataset_load_seed)
    p = dsub.add_parser("export-seed", help="write a shard for each finished collect run of a "
                                            "store that has none yet")
    p.add_argument("--out", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--include-running", action="store_true",
                   help="also runs still marked running (a killed collect)")
    db_option(p)
    p.set_defaults(func=cmd_dataset_export_seed)
    p = dsub.add_parser("info", help="what the seed holds, per profile and network")
    p.add_argument("--from", dest="source", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--markdown", action="store_true", help="a Markdown table (the datasheet's)")
    p.add_argument("--datasheet", help="also rewrite the generated block of this Markdown file")
    p.set_defaults(func=cmd_dataset_info)
    return parser


def main(argv: list[str] | None = None) -> int:
    bootstrap()
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except TenforgeError as exc:
        print(f"tenforge: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tenforge: interrupted; re-run the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
