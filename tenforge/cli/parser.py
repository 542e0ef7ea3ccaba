"""The argument parser: every command, its options and their defaults (retune's, the longest
list, in retune_parser.py)."""

from __future__ import annotations

import argparse
import os

from core.graphs import CHOICES
from models.dataset import LATENCY_STATISTICS
from models.evaluate import OBJECTIVES
from models.registry import FAMILIES
from models.splits import SPLITS
from models.transfer import STRATEGIES
from tenforge.cli import data_commands as data
from tenforge.cli import run_commands as run
from tenforge.cli import service_commands as service
from tenforge.cli.arg_types import Parser, int_at_least, json_object, names, positive
from tenforge.cli.retune_parser import add_retune

# The choices come from the registries of the floors below (none imports torch, TVM or
# Prefect at import time, so `--help` still answers at once).


def build_parser() -> argparse.ArgumentParser:
    from tasks.validation import default_db

    parser = Parser(prog="tenforge", description="Learn how fast tensor programs run on each "
                     "hardware target; tune DNNs faster with it.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    def db_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=default_db(),
                       help="DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb)")

    p = sub.add_parser("collect", help="measure candidates of networks on a hardware profile")
    p.add_argument("--hardware", default="local", help="profile name (`tenforge hardware`)")
    p.add_argument("--networks", type=names, default=["mlp", "tiny_cnn"],
                   help="comma-separated zoo networks (`tenforge networks`)")
    p.add_argument("--candidates", type=positive, default=8, help="candidates per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=positive, default=1)
    p.add_argument("--input-size", type=positive, default=None,
                   help="zoo networks: image side / sequence length (default: each network's "
                        "default size, `tenforge networks`)")
    p.add_argument("--graph", choices=CHOICES, default="exported",
                   help="how the networks are prepared (as `retune --graph`): their tasks are "
                        "stored as networks NAME+GRAPH, data for models that tune such graphs")
    p.add_argument("--simt", action="store_true",
                   help="a GPU profile: also sample as many candidates of each task's SIMT "
                        "space (no tensor cores), to measure what tensor cores gain")
    p.add_argument("--measure-batch", type=positive, default=16,
                   help="candidates built together before being run")
    p.add_argument("--reuse-tasks", action="store_true",
                   help="zoo networks the store already lists (same graph, batch and size) "
                        "are not imported again (a presampled or resumed store)")
    p.add_argument("--asm", action="store_true",
                   help="an x86 CPU: each build also keeps what its code does (the asm "
                        "columns, as `dataset asm`; a slower collect)")
    p.add_argument("--outbox", default=None,
                   help="export this run's shard to this folder, for a central store to "
                        "ingest (default: $TENFORGE_OUTBOX; unset = no export)")
    db_option(p)
    p.set_defaults(func=run.cmd_collect)

    p = sub.add_parser("onboard", help="first contact with a profile: measure a calibration "
                                       "set, fine-tune a pre-trained model, report accuracy")
    p.add_argument("--hardware", default="local", help="profile name (`tenforge hardware`)")
    p.add_argument("--candidates", type=positive, default=256,
                   help="calibration set size (12 per task)")
    p.add_argument("--parent", default=None, help="pre-trained model id, or shipped, to "
                   "fine-tune (default: the newest one that never saw this profile; with "
                   "none, the shipped model for this CPU; with none, one is pre-trained)")
    p.add_argument("--family", default="xgb",
                   help="family to pre-train when the store has no pre-trained model")
    p.add_argument("--strategy", default="residual",
                   choices=STRATEGIES,
                   help="fine-tuning strategy (residual: frozen model + a small model of its "
                        "errors)")
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=run.cmd_onboard)

    p = sub.add_parser("ingest", help="load the shards other machines exported into this store "
                                      "(checksummed, idempotent, resumable)")
    p.add_argument("sources", nargs="*", help="folders with exported shards (default: "
                                              "$TENFORGE_INBOX or data/inbox)")
    db_option(p)
    p.set_defaults(func=run.cmd_ingest)

    p = sub.add_parser("pipeline", help="the main job on embedded defaults")
    p.add_argument("--hardware", default="local")
    p.add_argument("--networks", type=names, default=["mlp", "tiny_cnn"])
    p.add_argument("--candidates", type=positive, default=4, help="candidates per task")
    p.add_argument("--search-trials", type=positive, default=4,
                   help="trials of the small model search (xgb, mlp)")
    p.add_argument("--retune-trials", type=positive, default=16,
                   help="measured candidates per retune at the end")
    p.add_argument("--calibration", type=positive, default=96,
                   help="calibration set when this profile is new to the store (>= 48)")
    p.add_argument("--sources", type=names, default=None,
                   help="comma-separated profiles the models learn from (default: every other "
                        "profile of this target kind in the store)")
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=run.cmd_pipeline)

    p = sub.add_parser("hardware", help="list hardware profiles")
    p.set_defaults(func=data.cmd_hardware)
    p = sub.add_parser("networks", help="the zoo's networks and the ones registered in the "
                                        "store; `networks add` registers your own")
    db_option(p)
    p.set_defaults(func=data.cmd_networks)
    nsub = p.add_subparsers(dest="networks_command", parser_class=Parser)
    p = nsub.add_parser("add", help="register your own network for collects, retunes and their "
                                    "scheduled deployments")
    p.add_argument("file", help="FILE.py:FACTORY (your code; FACTORY() returns (module, "
                                "example_inputs)), FILE.pt2 (torch.export.save) or FILE.onnx")
    p.add_argument("--name", required=True, help="the name to use for it everywhere")
    p.add_argument("--input-shape", action="append", default=None, metavar="NAME=DIMS",
                   help="a size for an input with dynamic dims, like input=1x3x224x224 "
                        "(repeat per input)")
    p.add_argument("--hardware", default="local",
                   help="profile whose target its task list is made for")
    db_option(p)
    p.set_defaults(func=data.cmd_networks_add)

    p = sub.add_parser("query", help="run SQL on the store (read-only)")
    p.add_argument("sql")
    db_option(p)
    p.set_defaults(func=data.cmd_query)

    p = sub.add_parser("import-ms", help="load a MetaSchedule JSON database into the store")
    p.add_argument("work_dir", help="folder with database_workload.json and "
                                    "database_tuning_record.json")
    p.add_argument("--hardware", required=True, help="profile the records were measured on")
    db_option(p)
    p.set_defaults(func=data.cmd_import_ms)

    p = sub.add_parser("export-ms", help="write a hardware's measurements as a MetaSchedule "
                                         "JSON database")
    p.add_argument("work_dir")
    p.add_argument("--hardware", required=True)
    db_option(p)
    p.set_defaults(func=data.cmd_export_ms)

    p = sub.add_parser("search", help="Optuna search for the best cost model on held-out tasks")
    p.add_argument("--hardware", type=names, default=None,
                   help="comma-separated profiles (default: all in the store)")
    p.add_argument("--networks", type=names, default=None, help="only these networks' tasks")
    p.add_argument("--split", default="by_task",
                   choices=SPLITS)
    p.add_argument("--holdout", type=names, default=None,
                   help="hardware (by_target) or networks (by_network) to test on")
    p.add_argument("--families", type=names, default=None,
                   help=f"comma-separated, of: {','.join(FAMILIES)}")
    p.add_argument("--trials", type=positive, default=20, help="total trials of the study")
    p.add_argument("--time-budget", type=float, default=900.0, help="seconds")
    p.add_argument("--metric", default="peak1", choices=OBJECTIVES)
    p.add_argument("--multi-objective", action="store_true",
                   help="also maximize pairwise accuracy and minimize training time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-epochs", type=positive, default=30)
    p.add_argument("--study", default=None, help="study name (a re-run continues it)")
    p.add_argument("--register-if-better", action="store_true",
                   help="with --split by_network: register the winner only if it beats every "
                        "model that held any of those networks out too, on those both held out")
    db_option(p)
    p.set_defaults(func=run.cmd_search)

    p = sub.add_parser("pretrain", help="train one model across source hardware profiles")
    p.add_argument("--hardware", type=names, default=None,
                   help="comma-separated source profiles (default: all in the store)")
    p.add_argument("--family", default="mlp", help="model family (see `tenforge search -h`)")
    p.add_argument("--params", type=json_object, default=None,
                   help="hyperparameters as JSON, e.g. '{\"hidden\": 64}'")
    p.add_argument("--from-model", default=None,
                   help="reuse a registered model's kind and configuration (the search winner)")
    p.add_argument("--networks", type=names, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout", type=names, default=None,
                   help="networks kept out of training and scored (every size of each)")
    p.add_argument("--register-if-better", action="store_true",
                   help="with --holdout: register only if it beats every model that held "
                        "any of them out too, on the networks both held out")
    db_option(p)
    p.set_defaults(func=run.cmd_pretrain)

    p = sub.add_parser("transfer", help="fine-tune a registered model to a target profile")
    p.add_argument("parent", nargs="?", default=None,
                   help="model id of the pre-trained model (default: the newest pre-trained)")
    p.add_argument("--hardware", default="local", help="target profile")
    p.add_argument("--samples", type=positive, default=200,
                   help="target measurements to fine-tune on")
    p.add_argument("--all-samples", dest="samples", action="store_const", const=None,
                   help="fine-tune on every target measurement of the training tasks")
    p.add_argument("--strategy", default="full",
                   choices=STRATEGIES)
    p.add_argument("--networks", type=names, default=None)
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=run.cmd_transfer)

    add_retune(sub, db_option)

    p = sub.add_parser("compile", help="a tuned network as a folder to deploy: the library "
                                       "(model.so), its weights, a manifest and an example")
    p.add_argument("network", help="the network a retune tuned (as named to retune)")
    p.add_argument("--hardware", default="local", help="hardware profile it was tuned on")
    p.add_argument("--tuning-id", default=None,
                   help="which retune's schedules (default: the fastest of this network on "
                        "this hardware; `tenforge report` lists them)")
    p.add_argument("--out", required=True, help="a new folder to write")
    db_option(p)
    p.set_defaults(func=run.cmd_compile)

    p = sub.add_parser("service", help="the service: Prefect server + UI, and for each hardware "
                                       "profile of this machine a work pool, its deployments "
                                       "and a worker")
    p.add_argument("action", choices=["start", "join", "stop", "status", "deployments"],
                   help="start: server + this machine; join: add this machine to a server "
                        "elsewhere (--api); deployments: list (or --write) this machine's")
    p.add_argument("--host", default="127.0.0.1", help="address of the server (and UI)")
    p.add_argument("--port", type=positive, default=4200)
    p.add_argument("--api", default=None, help="join: the server's API, http://HOST:4200/api")
    p.add_argument("--profiles", type=names, default=None,
                   help="comma-separated profiles to serve (default: every profile this "
                        "machine can run, `tenforge hardware`)")
    p.add_argument("--write", default=None, help="deployments: write them as a prefect.yaml")
    p.add_argument("--no-deploy", action="store_true",
                   help="start server, pools and workers, but do not (re)deploy")
    p.set_defaults(func=service.cmd_service)

    p = sub.add_parser("dashboard", help="Optuna's dashboard for the store's search studies")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=positive, default=8080)
    db_option(p)
    p.set_defaults(func=service.cmd_dashboard)

    p = sub.add_parser("report", help="what the store holds: measurements, best latencies, "
                                      "model leaderboard, tuning history")
    p.add_argument("--markdown", action="store_true", help="Markdown instead of plain text")
    p.add_argument("--hardware", default=None, help="only this profile (`local` ok)")
    db_option(p)
    p.set_defaults(func=data.cmd_report)

    p = sub.add_parser("models", help="registered cost models, what they were trained on, and "
                                      "their held-out metrics")
    p.add_argument("--hardware", default=None,
                   help="only models whose training data includes this profile (`local` ok)")
    db_option(p)
    p.set_defaults(func=data.cmd_models)
    msub = p.add_subparsers(dest="models_command", parser_class=Parser)
    p = msub.add_parser("evaluate", help="score a model on a store's measurements, network by "
                                         "network: TenSet's network-level top-1/top-5, per-task "
                                         "peak@1/peak@5, pairwise accuracy")
    p.add_argument("model", help="a registered model id, a model artifact folder, or shipped "
                   "(the model tenforge ships for this CPU)")
    p.add_argument("--hardware", type=names, default=None,
                   help="comma-separated profiles to score on (`local` ok; default: every "
                        "profile with measurements)")
    p.add_argument("--networks", type=names, default=None,
                   help="comma-separated networks (a name is every size of it; resnet18@160 "
                        "one of them; default: all)")
    p.add_argument("--latency", choices=LATENCY_STATISTICS, default="mean", help="charge each "
                   "candidate the mean of its timed repeats, as stored, or their median")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    db_option(p)
    p.set_defaults(func=data.cmd_models_evaluate)

    from storage.seed import SEED_DIR

    p = sub.add_parser("dataset", help="the shipped seed dataset: load, export, describe")
    dsub = p.add_subparsers(dest="dataset_command", required=True, parser_class=Parser)
    p = dsub.add_parser("load-seed", help="load the seed dataset into a store (any store: "
                                          "rows already there are kept)")
    p.add_argument("--from", dest="source", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--hardware", type=names, default=None,
                   help="comma-separated profiles to load (default: all)")
    db_option(p)
    p.set_defaults(func=data.cmd_dataset_load_seed)
    p = dsub.add_parser("export-seed", help="write a shard for each finished collect run of a "
                                            "store that has none yet")
    p.add_argument("--out", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--include-running", action="store_true",
                   help="also runs still marked running (a killed collect)")
    p.add_argument("--new-only", action="store_true",
                   help="only runs that measured in this store: skip those it loaded from a "
                        "shard (load-seed, ingest) that measured nothing more since")
    db_option(p)
    p.set_defaults(func=data.cmd_dataset_export_seed)
    p = dsub.add_parser("info", help="what the seed holds, per profile and network")
    p.add_argument("--from", dest="source", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--markdown", action="store_true", help="a Markdown table (the datasheet's)")
    p.add_argument("--datasheet", help="also rewrite the generated block of this Markdown file")
    p.set_defaults(func=data.cmd_dataset_info)
    p = dsub.add_parser("asm", help="rebuild a CPU profile's measured candidates and store what "
                                    "their assembly does (the asm columns; ~0.3 s a candidate "
                                    "a core; resumable)")
    p.add_argument("--hardware", required=True, help="an x86 CPU profile of the store "
                   "(`local` ok)")
    p.add_argument("--processes", type=int_at_least(1, "a number of build processes"),
                   default=os.cpu_count() or 1, help="build processes (default: every core)")
    p.add_argument("--limit", type=int_at_least(1, "a number of candidates"), default=None,
                   help="at most this many candidates this run (default: all)")
    db_option(p)
    p.set_defaults(func=data.cmd_dataset_asm)
    return parser
