"""What in a process's state moves a tuned network's end-to-end time: the CPU it runs on, and
whether its buffers sit on 4 KiB or huge pages. Tuned TVM and PyTorch eager side by side in one
run, each condition in several fresh processes.

Why: a tuned network's end-to-end time moves between fresh processes (on the Zen 4, BERT cells
timed twice read 228.8 then 250.4 ms, 265.4 then 232.7), and several cells run well above their
estimate (BERT XGB seed 1: 278.5 ms against 231.7; docs/tuning-results.md, seventy-sixth
session). Session 50 found it per process, not per allocation, on BERT's memory-bound FFN
matmuls. Two suspects a process fixes at its start:

  cpu    this machine is a 2-vCPU VM. A one-thread process mostly stays on the vCPU it starts
         on, and the two vCPUs need not be equally fast (what else the host runs beside each).
         `--cpus all,0,1` runs each timing unpinned, pinned to CPU 0, pinned to CPU 1 (the
         Measurer's workers inherit the affinity). Each line shows the CPU the worker last ran
         on (/proc/PID/stat).
  pages  here the kernel grants transparent huge pages only where a program asks
         (/sys/kernel/mm/transparent_hugepage/enabled = madvise). TVM's runtime never asks
         (numpy does, for its own large arrays), so TVM's buffers sit on 4 KiB pages, and a
         matmul streaming 11 MB walks ~2,800 pages, at the edge of the data TLB's reach. glibc
         (2.35 on) asks for them when `GLIBC_TUNABLES=glibc.malloc.hugetlb=1` is set: every
         large allocation, TVM's and PyTorch's alike, is then madvised. `--pages 4k,huge`
         times both; each line shows the worker's AnonHugePages (/proc/PID/smaps_rollup).

Per round, each condition in turn (so an hour's drift hits them all), for each database: a
fresh Measurer compiles the network with the database and times it end to end (median of
`--repeat`). `--torch` times PyTorch eager in a fresh process per condition and round, as the
tuning matrix does (median of 30 calls, the profile's thread count). The estimate is the
database's: sum over tasks of occurrences x best mean run time, as the search measured it.

    .venv/bin/python bench/process_state.py --network bert --graph nchw16c \\
        --database DIR[,DIR...] [--hardware local-1t] [--cpus all,0,1] [--pages 4k] \\
        [--rounds 4] [--repeat 20] [--torch]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._ms_databases import database_folders  # noqa: E402

HUGE_PAGES = "glibc.malloc.hugetlb=1"  # glibc madvises its mmapped chunks (MADV_HUGEPAGE)
MODES = {"4k": None, "huge": HUGE_PAGES}


def set_mode(mode: str) -> None:
    """The page mode the next child processes start with (they inherit os.environ)."""
    value = MODES[mode]
    if value is None:
        os.environ.pop("GLIBC_TUNABLES", None)
    else:
        os.environ["GLIBC_TUNABLES"] = value


def last_cpu(pid: int) -> int | None:
    """The CPU process `pid` last ran on (field 39 of /proc/PID/stat; None where unreadable)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text[text.rindex(")") + 2:].split()[36])  # fields after the command's name


def huge_kib(pid: int) -> int | None:
    """AnonHugePages of process `pid` in KiB (None where /proc does not say)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return None
    found = re.search(r"AnonHugePages:\s+(\d+) kB", text)
    return int(found.group(1)) if found else None


def database_estimate_ms(folder: str, weights: dict[str, float], target: dict) -> float:
    """Sum over the database's tasks of occurrences x best mean run time, in ms."""
    from storage.ms_database import records_by_task

    best = {key: records[0][0] for key, records in records_by_task(folder, target).items()}
    return sum(secs * weights.get(key, 1.0) for key, secs in best.items()) * 1e3


def spread(values: list[float]) -> str:
    return (f"{statistics.median(values):8.2f} ({min(values):.2f}-{max(values):.2f})"
            if values else "       -")


def parse_conditions(cpus: str, pages: str, available: set[int]) -> list[tuple[str, str]]:
    """[(cpu, page mode)] from the comma lists; exits in one line on a CPU this process may not
    use or an unknown page mode."""
    cpu_list = [c.strip() for c in cpus.split(",") if c.strip()]
    page_list = [p.strip() for p in pages.split(",") if p.strip()]
    bad_cpus = [c for c in cpu_list if c != "all" and not (c.isdigit() and int(c) in available)]
    if bad_cpus or not cpu_list:
        raise SystemExit(f"--cpus {cpus!r}: give 'all' or CPUs of {sorted(available)}, commas")
    if not page_list or set(page_list) - set(MODES):
        raise SystemExit(f"--pages {pages!r}: give any of {', '.join(MODES)}, commas")
    return [(c, p) for c in cpu_list for p in page_list]


def label(condition: tuple[str, str]) -> str:
    cpu, pages = condition
    return f"cpu {cpu}, {'4 KiB' if pages == '4k' else 'huge'} pages"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--network", required=True)
    parser.add_argument("--graph", default="exported")
    parser.add_argument("--database", required=True, help="tuning database folder(s), commas")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--cpus", default="all", help="all (unpinned) and/or CPU numbers")
    parser.add_argument("--pages", default="4k", help=f"any of {', '.join(MODES)}")
    parser.add_argument("--rounds", type=int, default=4, help="fresh processes per condition")
    parser.add_argument("--repeat", type=int, default=20, help="end-to-end runs per process")
    parser.add_argument("--torch", action="store_true", help="PyTorch eager too")
    args = parser.parse_args()
    if min(args.rounds, args.repeat) < 1:
        raise SystemExit("--rounds and --repeat: each at least 1")
    folders = database_folders(args.database)
    available = os.sched_getaffinity(0)
    conditions = parse_conditions(args.cpus, args.pages, available)

    import numpy as np

    from bench.tuning import torch_eager_ms_fresh
    from core.tvm_env import load_tvm
    from tasks.hardware import resolve_profile
    from tasks.measure import Measurer
    from tasks.tuning.hold import occurrences
    from tasks.workloads import import_to_relax

    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    relax_mod = import_to_relax(args.network, 1, None, args.graph)
    relax_json = tvm.ir.save_json(relax_mod)
    weights = occurrences(ms.relax_integration.extract_tasks(
        relax_mod, tvm.target.Target(profile.target)))
    policy = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    print(f"{args.network} ({args.graph}) on {profile.name}, {profile.num_threads} thread(s); "
          f"THP policy: {policy.read_text().strip() if policy.exists() else 'unknown'}; "
          f"{args.rounds} fresh processes per condition, median of {args.repeat} runs each",
          flush=True)
    whats = [*folders, *(["PyTorch eager"] if args.torch else [])]
    names = {what: Path(what).name if what in folders else what for what in whats}
    timed: dict[tuple[str, tuple[str, str]], list[float]] = {}
    saved = os.environ.get("GLIBC_TUNABLES")
    try:
        for round_ in range(args.rounds):
            for condition in conditions:
                cpu, pages = condition
                set_mode(pages)
                os.sched_setaffinity(0, available if cpu == "all" else {int(cpu)})
                for what in whats:
                    if what in folders:
                        with Measurer(profile) as measurer:
                            run = measurer.run_network(relax_json, what, repeat=args.repeat)
                            pid = measurer.runner.process.pid
                            where, kib = last_cpu(pid), huge_kib(pid)
                        value = float(np.median(run["run_secs"])) * 1e3
                        extra = f" (ran on CPU {where}, AnonHugePages {kib} kB)"
                    else:
                        value = torch_eager_ms_fresh(args.network, profile.num_threads, runs=30)
                        extra = ""
                    timed.setdefault((what, condition), []).append(value)
                    print(f"round {round_} {label(condition):22} {names[what]}: {value:.2f} ms"
                          f"{extra}",
                          flush=True)
    finally:
        os.sched_setaffinity(0, available)
        if saved is None:
            os.environ.pop("GLIBC_TUNABLES", None)
        else:
            os.environ["GLIBC_TUNABLES"] = saved

    print(f"\nend to end, ms: median (min-max) of {args.rounds} fresh processes per condition")
    print(f"{'what':28} {'estimate':>9} " + " ".join(f"{label(c):>24}" for c in conditions))
    for what in whats:
        estimate = (f"{database_estimate_ms(what, weights, profile.target):9.2f}"
                    if what in folders else f"{'-':>9}")
        print(f"{names[what]:28} {estimate} "
              + " ".join(f"{spread(timed[(what, c)]):>24}" for c in conditions))


if __name__ == "__main__":
    main()
