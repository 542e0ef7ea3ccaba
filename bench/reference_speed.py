"""How long a GPU task's reference outputs take on the host, the way session 88's H200 lease
made them and the way the measuring worker makes them now (tasks/measure/reference.py).

A GPU collect checks every candidate's outputs against the unscheduled function's, run once
per task on the host CPU. This imports --network as --graph at --batch-size for a CUDA target
(no GPU needed: the tasks are the ones a lent H200 measures), takes the --top heaviest tasks
by FLOPs, and makes each one's reference in a fresh process per variant and round (the
variants' order alternates between rounds), timing the build and the run:

- `generic 1 thread`: session 88's path: a generic x86-64 target (no F16C: float16 goes
  through software conversions), the loops as imported, TVM_NUM_THREADS=1;
- `host cpu 1 thread`: this host's `mcpu`, the loops as imported, one thread;
- `host cpu, parallel`: the worker's path now: this host's `mcpu`, each block's data-parallel
  outer loops fused and parallel, every usable core.

It prints per task the median seconds of each variant over the rounds and the ratios to the
first, and stops if any variant's outputs differ from the first's in one bit.

    .venv/bin/python bench/reference_speed.py [--network resnet18] [--batch-size 8]
        [--graph fp16] [--top 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.procs import usable_cores  # noqa: E402
from tasks.hardware import load_declared_profiles  # noqa: E402

# The H200's target as bench/offline/hardware.toml declares it: the tasks are split for it.
H200_TARGET = next(p.target for p in load_declared_profiles(
    Path(__file__).resolve().parent / "offline" / "hardware.toml") if p.name == "gpu-h200")
# name -> (host mcpu?, parallel outer loops?, TVM_NUM_THREADS)
VARIANTS = {
    "generic 1 thread": (False, False, 1),
    "host cpu 1 thread": (True, False, 1),
    "host cpu, parallel": (True, True, usable_cores()),
}


def _child(variant: str, mods_dir: Path) -> None:
    """Make each task's reference as `variant` says; print one JSON line per task."""
    import tvm
    from tvm.s_tir import meta_schedule as ms
    from tvm.target import Target

    from tasks.measure.reference import parallel_outer_loops, reference_target
    from tasks.measure.worker import _random_args

    host_cpu, parallel, _ = VARIANTS[variant]
    target = reference_target(H200_TARGET) if host_cpu else {"kind": "llvm"}
    for path in sorted(mods_dir.glob("*.json")):
        mod = tvm.ir.load_json(path.read_text())
        inputs = _random_args(ms.arg_info.ArgInfo.from_prim_func(mod["main"]), seed=0)
        start = time.perf_counter()
        lib = tvm.compile(parallel_outer_loops(mod) if parallel else mod, target=Target(target))
        built = time.perf_counter()
        tensors = [tvm.runtime.tensor(a, tvm.cpu(0)) for a in inputs]
        lib["main"](*tensors)
        ran = time.perf_counter()
        digest = hashlib.sha1(b"".join(t.numpy().tobytes() for t in tensors)).hexdigest()
        print(json.dumps({"task": path.stem, "build_s": built - start, "run_s": ran - built,
                          "digest": digest}), flush=True)


def _tasks(args: argparse.Namespace, mods_dir: Path) -> dict[str, float]:
    """Write the --top heaviest tasks' modules into `mods_dir`; name -> GFLOPs."""
    from core.tvm_env import load_tvm
    from tasks.workloads import extract_network_tasks

    load_tvm(H200_TARGET)
    tasks = extract_network_tasks(args.network, args.batch_size, None, H200_TARGET, args.graph)
    heaviest = sorted(tasks, key=lambda t: -t.flops)[:args.top]
    for n, task in enumerate(heaviest):
        (mods_dir / f"{n:02d}-{task.task_name}.json").write_text(task.mod_json)
    return {f"{n:02d}-{t.task_name}": t.flops / 1e9 for n, t in enumerate(heaviest)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--network", default="resnet18")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--graph", default="fp16")
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--child", choices=sorted(VARIANTS), help=argparse.SUPPRESS)
    parser.add_argument("--mods", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args.mods)
        return
    with tempfile.TemporaryDirectory(prefix="reference-speed-") as tmp:
        mods_dir = Path(tmp)
        gflops = _tasks(args, mods_dir)
        # variant -> task -> [(build_s, run_s)]; the first variant's digests are the truth
        seconds: dict[str, dict[str, list[tuple[float, float]]]] = {v: {} for v in VARIANTS}
        truth: dict[str, str] = {}
        for round_ in range(args.rounds):
            order = list(VARIANTS) if round_ % 2 == 0 else list(reversed(VARIANTS))
            for variant in order:
                env = {**os.environ, "TVM_NUM_THREADS": str(VARIANTS[variant][2])}
                out = subprocess.run([sys.executable, __file__, "--child", variant, "--mods",
                                      str(mods_dir)], env=env, check=True, capture_output=True,
                                     text=True).stdout
                for row in map(json.loads, out.splitlines()):
                    seconds[variant].setdefault(row["task"], []).append(
                        (row["build_s"], row["run_s"]))
                    if truth.setdefault(row["task"], row["digest"]) != row["digest"]:
                        raise SystemExit(f"reference_speed: {variant!r} changed the outputs "
                                         f"of {row['task']}")
                print(f"round {round_ + 1}/{args.rounds}: {variant} done", flush=True)
    first = next(iter(VARIANTS))
    print(f"\n{args.network} {args.graph} batch {args.batch_size}, the {args.top} heaviest "
          f"tasks for {H200_TARGET['arch']}; host: {usable_cores()} usable cores; median of "
          f"{args.rounds} fresh processes per variant; outputs identical in every run\n")
    print("| task | GFLOP | " + " | ".join(f"{v}: build + run s" for v in VARIANTS)
          + " | " + " | ".join(f"{v}: x faster" for v in list(VARIANTS)[1:]) + " |")
    print("|---" * (2 + 2 * len(VARIANTS) - 1) + "|")
    for task in gflops:
        total = {v: statistics.median(b + r for b, r in seconds[v][task]) for v in VARIANTS}
        cells = [f"{statistics.median(b for b, _ in seconds[v][task]):.2f} + "
                 f"{statistics.median(r for _, r in seconds[v][task]):.2f}" for v in VARIANTS]
        ratios = [f"{total[first] / total[v]:.1f}" for v in list(VARIANTS)[1:]]
        print(f"| {task} | {gflops[task]:.2f} | " + " | ".join(cells + ratios) + " |")


if __name__ == "__main__":
    main()
