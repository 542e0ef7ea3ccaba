"""How much sooner a warm start's sampling ends on several threads (tasks.sampling.sample_tasks).

A warm start (and instant tuning) first samples and featurizes every task's candidates. It did
so one task after another on one thread, while `retune` runs MetaSchedule's search on every
core it may use (2 on this machine kind). This times, side by side in one process, alternating
which goes first, the draw of all of a network's tasks the way a warm start draws them:

- `1 thread`: sample_tasks(threads=1), one task after another, as before;
- `N threads`: sample_tasks(threads=N), N tasks at a time (TVM's FFI releases the GIL);

and checks both give the same candidates (hashes, trace text, features). Prints seconds per
network and seed, and the ratio (median over seeds). Run it with nothing else on the machine:
its threads share the CPUs with whatever else runs.

    .venv/bin/python bench/sampling_threads.py [--networks resnet18:nchw16c,mobilenet_v2:nchw16c]
        [--samples 128] [--seeds 0,1,2] [--threads N (default: usable cores)]
        [--hardware local-1t]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.procs import usable_cores  # noqa: E402
from core.tvm_env import load_tvm  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.sampling import sample_tasks  # noqa: E402
from tasks.workloads import import_to_relax  # noqa: E402


def same_candidates(a: list, b: list) -> bool:
    return all(x is not None and y is not None and x[1] == y[1]
               and [(c.schedule_hash, c.trace_json) for c in x[0]]
               == [(c.schedule_hash, c.trace_json) for c in y[0]]
               and all(np.array_equal(p.features, q.features) for p, q in zip(x[0], y[0]))
               for x, y in zip(a, b))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="resnet18:nchw16c,mobilenet_v2:nchw16c",
                        help="NETWORK:GRAPH, comma-separated")
    parser.add_argument("--samples", type=int, default=128, help="candidates per task")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--threads", type=int, default=usable_cores())
    parser.add_argument("--hardware", default="local-1t")
    args = parser.parse_args()
    if args.threads < 2:
        raise SystemExit(f"--threads {args.threads}: give 2 or more (this process may use "
                         f"{usable_cores()} cores)")
    profile = resolve_profile(args.hardware)
    tvm = load_tvm(profile.target)
    from tvm.s_tir import meta_schedule as ms

    seeds = [int(s) for s in args.seeds.split(",")]
    print(f"{profile.name}: {args.samples} candidates per task, every task of each network, "
          f"seeds {seeds}, 1 against {args.threads} threads ({usable_cores()} usable cores); "
          "seconds per network (the first path alternates)")
    ratios = []
    for spec in args.networks.split(","):
        network, _, graph = spec.partition(":")
        relax_mod = import_to_relax(network, 1, None, graph or "exported")
        tasks = list(ms.relax_integration.extract_tasks(relax_mod, profile.tvm_target()))
        mod_jsons = [tvm.ir.save_json(t.dispatched[0]) for t in tasks]
        for k, seed in enumerate(seeds):
            requests = [(m, profile.target, args.samples, seed) for m in mod_jsons]
            timed, drawn = {}, {}
            for threads in ((1, args.threads) if k % 2 == 0 else (args.threads, 1)):
                started = time.perf_counter()
                drawn[threads] = sample_tasks(requests, threads)
                timed[threads] = time.perf_counter() - started
            if not same_candidates(drawn[1], drawn[args.threads]):
                raise SystemExit(f"{network} seed {seed}: 1 and {args.threads} threads sampled "
                                 "different candidates")
            ratio = timed[1] / timed[args.threads]
            ratios.append(ratio)
            count = sum(len(d[0]) for d in drawn[1])
            print(f"  {network}:{graph} seed {seed}: {len(tasks)} tasks, {count} candidates "
                  f"(identical): {timed[1]:.1f} s on 1 thread, {timed[args.threads]:.1f} s on "
                  f"{args.threads} ({ratio:.2f}x)", flush=True)
    print(f"1-thread / {args.threads}-thread time: median {statistics.median(ratios):.2f}x "
          f"(min {min(ratios):.2f}, max {max(ratios):.2f}) over {len(ratios)} network-seeds")


if __name__ == "__main__":
    main()
