"""The argument parser: every command, its options and their defaults, in one place."""

from __future__ import annotations

import argparse
import os
from typing import Callable

from core.graphs import CHOICES
from models.dataset import LATENCY_STATISTICS
from models.evaluate import OBJECTIVES
from models.registry import FAMILIES
from models.splits import SPLITS
from models.transfer import STRATEGIES
from tasks.tuning import SCHEDULERS
from tenforge.cli import data_commands as data
from tenforge.cli import run_commands as run
from tenforge.cli import service_commands as service

# The choices come from the registries of the floors below (none imports torch, TVM or
# Prefect at import time, so `--help` still answers at once).


def _names(value: str) -> list[str]:
    """A comma-separated list: "a, b," -> ["a", "b"]."""
    return [n.strip() for n in value.split(",") if n.strip()]


def _int_at_least(minimum: int, expected: str) -> Callable[[str], int]:
    """An argparse type: an integer of at least `minimum`, else "expected <expected>, got ..."."""
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {number}")
        return number

    return parse


_positive = _int_at_least(1, "a positive integer")
_non_negative = _int_at_least(0, "a whole number, 0 or more")


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


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (plus where to look) and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")


def build_parser() -> argparse.ArgumentParser:
    from tasks.validation import default_db

    parser = _Parser(prog="tenforge", description="Learn how fast tensor programs run on each "
                     "hardware target; tune DNNs faster with it.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def db_option(p: argparse.ArgumentParser) -> None:
        p.add_argument("--db", default=default_db(),
                       help="DuckDB store (default: $TENFORGE_DB or data/tenforge.duckdb)")

    p = sub.add_parser("collect", help="measure candidates of networks on a hardware profile")
    p.add_argument("--hardware", default="local", help="profile name (`tenforge hardware`)")
    p.add_argument("--networks", type=_names, default=["mlp", "tiny_cnn"],
                   help="comma-separated zoo networks (`tenforge networks`)")
    p.add_argument("--candidates", type=_positive, default=8, help="candidates per task")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-size", type=_positive, default=1)
    p.add_argument("--input-size", type=_positive, default=None,
                   help="zoo networks: image side / sequence length (default: each network's "
                        "default size, `tenforge networks`)")
    p.add_argument("--graph", choices=CHOICES, default="exported",
                   help="how the networks are prepared (as `retune --graph`): their tasks are "
                        "stored as networks NAME+GRAPH, data for models that tune such graphs")
    p.add_argument("--simt", action="store_true",
                   help="a GPU profile: also sample as many candidates of each task's SIMT "
                        "space (no tensor cores), to measure what tensor cores gain")
    p.add_argument("--measure-batch", type=_positive, default=16,
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
    p.add_argument("--candidates", type=_positive, default=256,
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
    p.add_argument("--networks", type=_names, default=["mlp", "tiny_cnn"])
    p.add_argument("--candidates", type=_positive, default=4, help="candidates per task")
    p.add_argument("--search-trials", type=_positive, default=4,
                   help="trials of the small model search (xgb, mlp)")
    p.add_argument("--retune-trials", type=_positive, default=16,
                   help="measured candidates per retune at the end")
    p.add_argument("--calibration", type=_positive, default=96,
                   help="calibration set when this profile is new to the store (>= 48)")
    p.add_argument("--sources", type=_names, default=None,
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
    nsub = p.add_subparsers(dest="networks_command", parser_class=_Parser)
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
    p.add_argument("--hardware", type=_names, default=None,
                   help="comma-separated profiles (default: all in the store)")
    p.add_argument("--networks", type=_names, default=None, help="only these networks' tasks")
    p.add_argument("--split", default="by_task",
                   choices=SPLITS)
    p.add_argument("--holdout", type=_names, default=None,
                   help="hardware (by_target) or networks (by_network) to test on")
    p.add_argument("--families", type=_names, default=None,
                   help=f"comma-separated, of: {','.join(FAMILIES)}")
    p.add_argument("--trials", type=_positive, default=20, help="total trials of the study")
    p.add_argument("--time-budget", type=float, default=900.0, help="seconds")
    p.add_argument("--metric", default="peak1", choices=OBJECTIVES)
    p.add_argument("--multi-objective", action="store_true",
                   help="also maximize pairwise accuracy and minimize training time")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-epochs", type=_positive, default=30)
    p.add_argument("--study", default=None, help="study name (a re-run continues it)")
    p.add_argument("--register-if-better", action="store_true",
                   help="with --split by_network: register the winner only if it beats every "
                        "model that held any of those networks out too, on those both held out")
    db_option(p)
    p.set_defaults(func=run.cmd_search)

    p = sub.add_parser("pretrain", help="train one model across source hardware profiles")
    p.add_argument("--hardware", type=_names, default=None,
                   help="comma-separated source profiles (default: all in the store)")
    p.add_argument("--family", default="mlp", help="model family (see `tenforge search -h`)")
    p.add_argument("--params", type=_json_object, default=None,
                   help="hyperparameters as JSON, e.g. '{\"hidden\": 64}'")
    p.add_argument("--from-model", default=None,
                   help="reuse a registered model's kind and configuration (the search winner)")
    p.add_argument("--networks", type=_names, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--holdout", type=_names, default=None,
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
    p.add_argument("--samples", type=_positive, default=200,
                   help="target measurements to fine-tune on")
    p.add_argument("--all-samples", dest="samples", action="store_const", const=None,
                   help="fine-tune on every target measurement of the training tasks")
    p.add_argument("--strategy", default="full",
                   choices=STRATEGIES)
    p.add_argument("--networks", type=_names, default=None)
    p.add_argument("--seed", type=int, default=0)
    db_option(p)
    p.set_defaults(func=run.cmd_transfer)

    p = sub.add_parser("retune", help="tune a network with the best learned cost model and "
                                      "measure its end-to-end latency")
    p.add_argument("network", help="a zoo or registered network (`tenforge networks`), or "
                                   "FILE.py:FACTORY, FILE.pt2 or FILE.onnx")
    p.add_argument("--hardware", default="local", help="hardware profile")
    p.add_argument("--trials", type=_positive, default=64, help="measured candidates in all")
    p.add_argument("--minutes", type=float, default=None,
                   help="wall-clock budget of the search (default: none)")
    p.add_argument("--cost-model", default=None,
                   help="registered model id, shipped (the model tenforge ships for this "
                        "CPU), or metaschedule-xgb (default: the best registered model for "
                        "this hardware; with none, the shipped one)")
    p.add_argument("--scheduler", default="gradient", choices=SCHEDULERS,
                   help="task scheduler: gradient (MetaSchedule's), round-robin, gain "
                        "(tenforge's expected gain), dual (gain per task and design space), "
                        "instant (no search: per task rank --population sampled candidates "
                        "with the learned model, measure the top trials/tasks, 2 to 8; the "
                        "rest of --trials by each task's share of the estimated latency)")
    p.add_argument("--flops-share", type=float, default=0.9,
                   help="tune the tasks that carry this share of FLOPs x occurrences "
                        "(1.0: every task, zero-FLOP data movement such as transposes too)")
    p.add_argument("--population", type=_positive, default=None,
                   help="evolutionary search population per round (default: 8x the "
                        "candidates a round measures, 64 to 256; instant: 256 ranked per "
                        "task; smaller: faster rounds)")
    p.add_argument("--graph", choices=CHOICES, default=None,
                   help="how the network is prepared before tuning: exported (as torch.export "
                        "gives it), folded (what depends on the weights alone runs once, at "
                        "load; operators after a convolution fuse into it), nhwc (folded, "
                        "convolutions channels-last), nchw8c / nchw16c (folded, channels "
                        "blocked by 8 / 16: one AVX2 / AVX-512 vector), packed8 / packed16 "
                        "(those, and linear layers' weights packed in blocks of columns), "
                        "blocked (nchw8c or nchw16c, this profile's vector). Default: blocked "
                        "on a CPU (1.3x faster than exported on resnet18 and mobilenet_v2 at "
                        "1,000 trials), exported on a GPU")
    p.add_argument("--warm-start", type=_positive, default=None, metavar="K",
                   help="before the search, measure the learned model's top K of "
                        "--warm-samples ranked candidates per task (as instant does), out of "
                        "--trials: every task has a good schedule within minutes and the "
                        "search starts from them")
    p.add_argument("--warm-samples", type=_positive, default=None, metavar="N",
                   help="with --warm-start: sampled candidates the model ranks per task "
                        "(default 256; 128 reached MetaSchedule's final 4.6x sooner on "
                        "mobilenet_v2's 53 tasks, and ended 27%% slower on resnet18)")
    p.add_argument("--hold-top", type=_non_negative, default=None, metavar="N",
                   help="before compiling, each heavy task's best is measured again in 2 "
                        "fresh processes, and where it ran over 10%% slower, its N best "
                        "beside it, one replacing it only if over 10%% faster there "
                        "(default 16; 0: no hold). Some schedules keep their speed only in "
                        "some processes: a BERT build ran 35%% over its estimate without it")
    p.add_argument("--rerank-model", default=None, metavar="ID",
                   help="with --scheduler instant or --warm-start, x86 CPUs: a model trained "
                        "on the asm columns re-orders each task's top 32 picks by what LLVM "
                        "made of them (a build each) before they are measured")
    p.add_argument("--trials-per-round", type=_positive, default=None, metavar="N",
                   help="candidates measured per turn of a task (default: what gives every "
                        "task two turns of --trials, 4 to 64); with a pre-trained model, 8 "
                        "gives a first estimate over every task sooner and the rest of the "
                        "budget to the heaviest tasks")
    p.add_argument("--batch-size", type=_positive, default=1)
    p.add_argument("--input-size", type=_positive, default=None,
                   help="zoo networks: image side / sequence length (default: the network's "
                        "default size, `tenforge networks`)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--force", action="store_true",
                   help="tune even if nothing changed since the last run")
    p.add_argument("--out", default=None,
                   help="also write the tuned network as a deployable folder (see compile)")
    db_option(p)
    p.set_defaults(func=run.cmd_retune)

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
    p.add_argument("--port", type=_positive, default=4200)
    p.add_argument("--api", default=None, help="join: the server's API, http://HOST:4200/api")
    p.add_argument("--profiles", type=_names, default=None,
                   help="comma-separated profiles to serve (default: every profile this "
                        "machine can run, `tenforge hardware`)")
    p.add_argument("--write", default=None, help="deployments: write them as a prefect.yaml")
    p.add_argument("--no-deploy", action="store_true",
                   help="start server, pools and workers, but do not (re)deploy")
    p.set_defaults(func=service.cmd_service)

    p = sub.add_parser("dashboard", help="Optuna's dashboard for the store's search studies")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=_positive, default=8080)
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
    msub = p.add_subparsers(dest="models_command", parser_class=_Parser)
    p = msub.add_parser("evaluate", help="score a model on a store's measurements, network by "
                                         "network: TenSet's network-level top-1/top-5, per-task "
                                         "peak@1/peak@5, pairwise accuracy")
    p.add_argument("model", help="a registered model id, a model artifact folder, or shipped "
                   "(the model tenforge ships for this CPU)")
    p.add_argument("--hardware", type=_names, default=None,
                   help="comma-separated profiles to score on (`local` ok; default: every "
                        "profile with measurements)")
    p.add_argument("--networks", type=_names, default=None,
                   help="comma-separated networks (a name is every size of it; resnet18@160 "
                        "one of them; default: all)")
    p.add_argument("--latency", choices=LATENCY_STATISTICS, default="mean", help="charge each "
                   "candidate the mean of its timed repeats, as stored, or their median")
    p.add_argument("--json", action="store_true", help="one JSON object instead of a table")
    db_option(p)
    p.set_defaults(func=data.cmd_models_evaluate)

    from storage.seed import SEED_DIR

    p = sub.add_parser("dataset", help="the shipped seed dataset: load, export, describe")
    dsub = p.add_subparsers(dest="dataset_command", required=True, parser_class=_Parser)
    p = dsub.add_parser("load-seed", help="load the seed dataset into a store (any store: "
                                          "rows already there are kept)")
    p.add_argument("--from", dest="source", default=str(SEED_DIR), help="seed folder")
    p.add_argument("--hardware", type=_names, default=None,
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
    p.add_argument("--processes", type=_int_at_least(1, "a number of build processes"),
                   default=os.cpu_count() or 1, help="build processes (default: every core)")
    p.add_argument("--limit", type=_int_at_least(1, "a number of candidates"), default=None,
                   help="at most this many candidates this run (default: all)")
    db_option(p)
    p.set_defaults(func=data.cmd_dataset_asm)
    return parser
