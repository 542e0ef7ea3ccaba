"""What keeping the asm columns costs the collect path: the same candidates measured by
tasks.measure.Measurer with and without `keep_asm`, in one run.

Collect keeps them on x86 CPU profiles (tasks/collect.py): each build also prints its assembly
and reads models/asm_features.py's columns from it. This samples --candidates candidates of the
--top heaviest tasks (FLOPs x occurrences) of each network and measures all of them (build, run,
verify) once per mode per round, alternating which mode goes first, with one Measurer per mode
(started before timing: worker start-up is left out). It prints, per round and mode, the median
build seconds of a candidate (as the worker times it) and candidates per minute of the whole
measure call, then the medians' ratios (with / without). Machines are noisy: read the ratios.

    .venv/bin/python bench/asm_cost.py [--networks resnet18:nchw16c,mobilenet_v2:nchw16c]
        [--top 2] [--candidates 12] [--rounds 3] [--build-workers 2] [--hardware local-1t]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from tasks.hardware import resolve_profile  # noqa: E402
from tasks.measure import MeasureJob, Measurer  # noqa: E402
from tasks.sampling import sample_candidates  # noqa: E402
from tasks.workloads import extract_network_tasks  # noqa: E402

MODES = ("without asm", "with asm")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--networks", default="resnet18:nchw16c,mobilenet_v2:nchw16c",
                        help="NETWORK[:GRAPH], comma-separated")
    parser.add_argument("--top", type=int, default=2, help="heaviest tasks per network")
    parser.add_argument("--candidates", type=int, default=12, help="sampled per task")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--build-workers", type=int, default=2)
    parser.add_argument("--hardware", default="local-1t")
    args = parser.parse_args()
    profile = resolve_profile(args.hardware)
    if not profile.x86_cpu:
        raise SystemExit(f"asm_cost: the asm columns read x86 code; {profile.name} is "
                         f"{profile.target_kind}/{profile.arch}")
    jobs: list[tuple[str, str, str, float]] = []  # (workload, module, trace, flops)
    for spec in args.networks.split(","):
        network, _, graph = spec.partition(":")
        tasks = sorted(extract_network_tasks(network, 1, None, profile.target,
                                             graph=graph or "exported"),
                       key=lambda t: -t.flops * t.weight)[:args.top]
        for task in tasks:
            candidates, _ = sample_candidates(task.mod_json, profile.target, args.candidates,
                                              seed=0)
            jobs += [(task.workload_hash, task.mod_json, c.trace_json, task.flops)
                     for c in candidates]
    print(f"{profile.name}: {len(jobs)} candidates ({args.top} heaviest tasks of "
          f"{args.networks}), {args.build_workers} build workers, {args.rounds} rounds")
    measurers = {mode: Measurer(profile, build_workers=args.build_workers,
                                keep_asm=mode == "with asm") for mode in MODES}
    build_s: dict[str, list[float]] = {mode: [] for mode in MODES}
    per_min: dict[str, list[float]] = {mode: [] for mode in MODES}
    next_id = 0
    try:
        for r in range(args.rounds):
            for mode in (MODES if r % 2 == 0 else MODES[::-1]):
                # fresh ids: a worker loads each artifact path once
                batch = [MeasureJob(next_id + i, *job) for i, job in enumerate(jobs)]
                next_id += len(batch)
                started = time.perf_counter()
                results = measurers[mode].measure(batch)
                wall = time.perf_counter() - started
                ok = [res for res in results if res.error_kind is None]
                if mode == "with asm" and any(res.asm is None for res in ok):
                    raise SystemExit("asm_cost: a build measured with keep_asm has no columns")
                build_s[mode].append(statistics.median(res.build_s for res in results
                                                       if res.build_s is not None))
                per_min[mode].append(60 * len(results) / wall)
                print(f"  round {r} {mode}: build {build_s[mode][-1] * 1e3:.0f} ms a candidate "
                      f"(median), {per_min[mode][-1]:.1f} candidates/min, "
                      f"{len(results) - len(ok)} errors", flush=True)
    finally:
        for measurer in measurers.values():
            measurer.close()
    build = [statistics.median(build_s[m]) for m in MODES]
    rate = [statistics.median(per_min[m]) for m in MODES]
    print(f"build per candidate: {build[0] * 1e3:.0f} -> {build[1] * 1e3:.0f} ms "
          f"({build[1] / build[0]:.2f}x); measured candidates/min: {rate[0]:.1f} -> "
          f"{rate[1]:.1f} ({rate[1] / rate[0]:.2f}x) (medians over rounds, with / without)")


if __name__ == "__main__":
    main()
