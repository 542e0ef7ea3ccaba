"""Sample a collect's candidates here, so that a lent machine only measures them.

Sampling needs no GPU (a CUDA target's design space, postprocessors and features are all
computed on the host), but it is CPU-bound and slow where most samples are rejected: a float16
convolution's SIMT space (`collect --simt`) rejects ~40 samples for every valid one. A lease of
a GPU machine is minutes long, so sample into a store here, carry it, and run the same collect
there on a copy of it: collect finds every candidate stored and goes straight to measuring.

    TENFORGE_HARDWARE=bench/offline/hardware.toml .venv/bin/python bench/offline/presample.py \\
        --hardware gpu-h200 --networks resnet18,bert --candidates 12 --graph fp16 --simt \\
        --db data/offline/gpu-presampled.duckdb

A lent machine's host CPU is no profile here: name one of its shard manifests instead, e.g.
`--hardware dataset/device/h200-20261130-s68/<a host shard>.json --graph exported
--candidates 16`: the store then holds the profile exactly as the host's own collect registers
it (its `local-1t`), and that collect only measures (gpu_and_host.sh's CPU_STORE).

then on the lent machine `GPU_STORE=... bench/offline/gpu_and_host.sh` (or collect_there.sh
with the same networks, candidates, seed, graph and --simt, and the store copied to its DB).
Same TVM, same target: the same tasks and the same seeded candidates, whatever the host.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

if TYPE_CHECKING:
    from core.hardware import HardwareProfile


def profile_of_shard(manifest: Path) -> HardwareProfile:
    """The hardware profile a shard was measured on, as its store row had it (name, target,
    features): a lent machine's host, whose profile exists only where it is detected."""
    from core.errors import TenforgeError
    from core.hardware import HardwareProfile

    try:
        return HardwareProfile.from_row(json.loads(manifest.read_text())["hardware"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TenforgeError(f"{manifest}: not a shard manifest with a hardware block "
                            f"({type(exc).__name__}: {exc}); give a profile name or a "
                            "<shard>.json of dataset/") from None


def main(argv: list[str] | None = None) -> int:
    from core.errors import TenforgeError
    from core.graphs import CHOICES, resolve_graph
    from storage.store import Store
    from tasks.collect import register_network, sample_task
    from tasks.hardware import resolve_profile
    from tasks.sampling import uses_tensor_cores
    from tasks.validation import check_positive_ints

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hardware", required=True,
                        help="the profile the lent machine measures, or a shard manifest "
                             "(.json) of it: its host CPU, as its own collect names it")
    parser.add_argument("--networks", required=True, help="comma-separated zoo networks")
    parser.add_argument("--candidates", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=1, help="as `collect --batch-size`")
    parser.add_argument("--input-size", type=int, default=None,
                        help="as `collect --input-size` (default: each network's own)")
    parser.add_argument("--graph", choices=CHOICES, default="exported")
    parser.add_argument("--simt", action="store_true", help="as `collect --simt`")
    parser.add_argument("--db", required=True)
    args = parser.parse_args(argv)
    try:
        profile = (profile_of_shard(Path(args.hardware)) if args.hardware.endswith(".json")
                   else resolve_profile(args.hardware))
        if args.simt and profile.target_kind != "cuda":
            raise TenforgeError(f"--simt needs a CUDA profile; {profile.name!r} is "
                                f"{profile.target_kind}")
        check_positive_ints(candidates=args.candidates, batch_size=args.batch_size)
        if args.input_size is not None:
            check_positive_ints(input_size=args.input_size)
        # as collect does ("blocked" is asked for, never imported: the profile's own block)
        graph = resolve_graph(args.graph, profile.target_kind,
                              profile.features.get("vector_unit_bytes", 0))
    except TenforgeError as exc:
        print(f"presample: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    task_ids: list[int] = []
    for network in args.networks.split(","):
        task_ids += register_network(args.db, profile, network, args.batch_size,
                                     args.input_size, graph)
    task_ids = list(dict.fromkeys(task_ids))
    for n, task_id in enumerate(task_ids, 1):
        got = sample_task(args.db, profile, task_id, args.candidates, args.seed)
        if args.simt:
            simt = sample_task(args.db, profile, task_id, args.candidates, args.seed, simt=True)
            got = {"new": got["new"] + simt["new"], "invalid": got["invalid"] + simt["invalid"]}
        print(f"task {n}/{len(task_ids)} (id {task_id}): {got['new']} new, "
              f"{got['invalid']} invalid samples, {time.monotonic() - started:.0f} s", flush=True)
    with Store(args.db, read_only=True) as store:
        hardware_id = store.hardware_id(profile.name)
        traces = [t for task_id in task_ids
                  for _, t in store.candidate_traces(task_id, hardware_id)]
    wmma = sum(uses_tensor_cores(t) for t in traces) if profile.target_kind == "cuda" else 0
    print(f"{args.db}: {len(task_ids)} tasks, {len(traces)} candidates "
          f"({wmma} tensor-core) for {profile.name}, {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
