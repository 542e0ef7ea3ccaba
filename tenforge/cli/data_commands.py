"""Commands that read or move data: list profiles and networks, query, report, import and
export MetaSchedule databases, the seed dataset."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from core.errors import TenforgeError


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
    from storage.queries import registered_workloads
    from storage.reports import format_table
    from storage.store import Store
    from tasks.networks import ZOO
    from tasks.validation import check_db_path

    print(format_table(["network", "default size", "description"],
                       [(d.name, d.default_size, d.description) for d in ZOO.values()]))
    path = check_db_path(args.db)
    rows = []
    if Path(path).exists():
        with Store(path, read_only=True) as store:
            rows = registered_workloads(store)
    if rows:
        print(f"\nregistered in {path}:")
        print(format_table(["network", "kind", "inputs", "tasks", "source"], [
            (name, kind, " ".join("x".join(map(str, i["shape"])) + f":{i['dtype']}"
                                  for i in json.loads(inputs)), tasks, source)
            for name, kind, source, inputs, tasks, _ in rows]))
    return 0


def cmd_networks_add(args: argparse.Namespace) -> int:
    from tasks.hardware import resolve_profile
    from tasks.network_registry import register
    from tasks.sources import file_workload, looks_like_file, parse_input_shapes
    from tasks.validation import check_db_path

    if not looks_like_file(args.file):
        raise TenforgeError(f"{args.file!r} is not a file reference; give FILE.py:FACTORY, "
                            "FILE.pt2 or FILE.onnx")
    workload = file_workload(args.file, args.name, parse_input_shapes(args.input_shape))
    profile = resolve_profile(args.hardware)
    row = register(check_db_path(args.db), workload, profile.target)
    tasks = len(json.loads(row["tasks_json"]))
    print(f"registered {workload.name} ({workload.kind}, {tasks} tasks on {profile.name}); "
          f"retune it with `tenforge retune {workload.name}`; `tenforge service` deploys "
          f"retune-{workload.name}-<profile> for it")
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
    from tasks.hardware import resolve_profile
    from tasks.validation import prepare_db_path

    summary = import_ms(args.work_dir, resolve_profile(args.hardware),
                        str(prepare_db_path(args.db)))
    print(f"imported {summary['records']} records ({summary['new_measurements']} new "
          f"measurements) of {summary['workloads']} workloads into {args.db}")
    return 0


def cmd_export_ms(args: argparse.Namespace) -> int:
    from storage.ms_database import export_ms
    from tasks.hardware import profile_name

    summary = export_ms(args.db, profile_name(args.hardware), args.work_dir)
    print(f"exported {summary['records']} records of {summary['workloads']} workloads to "
          f"{args.work_dir}")
    for message, times in summary["skipped"].items():
        print(f"left out {times} records whose trace does not replay on the stored task: "
              f"{message} (a store loaded anew from its shards has them renamed)")
    return 0


def cmd_dataset_load_seed(args: argparse.Namespace) -> int:
    from storage.seed import load_shards
    from tasks.hardware import profile_names
    from tasks.validation import prepare_db_path

    summary = load_shards(str(prepare_db_path(args.db)), args.source,
                          profile_names(args.hardware))
    before = f", {summary['loaded_before']} loaded before" if summary["loaded_before"] else ""
    print(f"loaded {summary['shards']} seed shards ({summary['measurements_added']} new "
          f"measurements{before}) into {summary['db']} in {summary['seconds']} s")
    return 0


def cmd_dataset_export_seed(args: argparse.Namespace) -> int:
    from storage.seed_export import export_shards

    written = export_shards(args.db, args.out, include_running=args.include_running,
                            new_only=args.new_only)
    for shard in written:
        print(f"wrote {args.out}/{shard.hardware}/{shard.stem}: {shard.network}, "
              f"{shard.measured} measurements ({shard.errors} errors)")
    print(f"{len(written)} new shards")
    return 0


def cmd_dataset_asm(args: argparse.Namespace) -> int:
    from tasks.compiled_code import store_asm_features
    from tasks.hardware import profile_name
    from tasks.validation import check_db_path

    hardware = profile_name(args.hardware)
    counts = store_asm_features(check_db_path(args.db), hardware, args.processes, args.limit,
                                progress=print)
    print(f"{counts['stored']} of {counts['wanted']} candidates of {hardware} got asm columns "
          f"({counts['failed']} builds failed: stored as missing)")
    return 0


DATASHEET_BEGIN = "<!-- generated by `./run dataset info --datasheet docs/seed-dataset.md` -->"
DATASHEET_END = "<!-- end generated -->"


def cmd_dataset_info(args: argparse.Namespace) -> int:
    from storage.reports import format_table
    from storage.seed_info import datasheet_rows, seed_totals

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


def cmd_models_evaluate(args: argparse.Namespace) -> int:
    from models.evaluate import sliver_list
    from storage.reports import format_table
    from tasks.hardware import profile_name
    from tasks.model_evaluation import evaluate_model
    from tasks.validation import check_db_path

    hardware = tuple(profile_name(h) for h in args.hardware or ())
    result = evaluate_model(args.model, check_db_path(args.db), hardware,
                            tuple(args.networks or ()), args.latency)
    if args.json:
        print(json.dumps(_no_nan(result), indent=1, sort_keys=True))
        return 0
    seen = {True: "yes", False: "no", None: "?"}
    print(f"model {result['model']} ({result['kind']}, trained on "
          f"{', '.join(result['trained_on_hardware']) or '?'}) on {result['store']}: "
          f"{result['tasks']} (task, profile) pairs, {result['candidates']} candidates, hardware "
          f"{', '.join(result['hardware'])}; latency: the {result['latency']} of each "
          "candidate's repeats")
    rows = [(net, seen[v["in_training"]], f"{v['top1']:.3f}", f"{v['top5']:.3f}")
            for net, v in result["networks"].items()]
    rows.append(("mean", "", f"{result['mean_network_top1']:.3f}",
                 f"{result['mean_network_top5']:.3f}"))
    print(format_table(["network", "in training", "top-1", "top-5"], rows))
    if len(result["per_hardware"]) > 1:  # the mean above is over profiles: show them apart
        print(format_table(["profile", "top-1", "top-5", "networks scored there"], [
            (hw, f"{v['mean_network_top1']:.3f}", f"{v['mean_network_top5']:.3f}",
             ", ".join(v["networks"])) for hw, v in result["per_hardware"].items()]))
    print(f"per task: peak@1 {result['peak1']:.3f}, peak@5 {result['peak5']:.3f}, pairwise "
          f"{result['pairwise']:.3f}  (network top-k: TenSet's score, best of the model's top k "
          "per task, weighted by occurrences, mean over hardware)")
    slivers = sliver_list(result["not_scored"])
    if slivers and args.networks:
        print("not scored where a profile measured under half of the network's work:\n  "
              + "\n  ".join(slivers))
    elif slivers:
        print(f"not scored: {len(slivers)} (network, profile) pairs with under half of the "
              "network's work measured, tasks it shares with networks collected there "
              "(`--json`: not_scored)")
    return 0


def _no_nan(value):
    """JSON has no NaN (a network none of whose tasks could be scored): null instead."""
    if isinstance(value, dict):
        return {k: _no_nan(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nan(v) for v in value]
    return None if isinstance(value, float) and value != value else value
