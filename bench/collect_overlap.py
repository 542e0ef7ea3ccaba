"""What building ahead (tasks/measure/build_stream.py) should save a GPU collect, projected from
a shard's own build times: its candidates' `build_s`, in the order they were measured, packed
onto the build workers chunk by chunk (each chunk waits for its last build, as the collect did
before) and as one stream (each worker takes the next build as soon as it is free). Runs and
the reference are left out of both (fast behind a GPU: a run's wall time is ~1 ms); the
shard's recorded span, first to last measurement, is printed beside them.

    .venv/bin/python bench/collect_overlap.py SHARD.parquet [--workers 8] [--chunk 16]

e.g. SHARD = dataset/device/h200-20261204-s90/20261204T173542-resnet18+mobilenet_v2+bert-3cb012dd
(session 90's batch-8 float16 GPU collect: 1.87x projected)

A projection from measured build times, not a measurement: the next lease's collect (which
builds ahead behind a GPU) measures it.
"""

from __future__ import annotations

import argparse
import heapq
import sys
from pathlib import Path

import duckdb


def packed_seconds(builds: list[float], workers: int) -> float:
    """Wall seconds for `builds` (in order) on `workers`, each taking the next when free."""
    free = [0.0] * workers
    for seconds in builds:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def chunked_seconds(builds: list[float], workers: int, chunk: int) -> float:
    """The same, each chunk of `chunk` builds starting when the chunk before has finished."""
    return sum(packed_seconds(builds[i:i + chunk], workers) for i in range(0, len(builds), chunk))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("shard", type=Path, help="a shard's measurements (.parquet)")
    parser.add_argument("--workers", type=int, default=8, help="build workers (the H200's "
                        "GPU collect: 8, its half of the host's cores)")
    parser.add_argument("--chunk", type=int, default=16, help="collect's measure batch")
    args = parser.parse_args(argv)
    if not args.shard.is_file() or args.shard.name.endswith(".tasks.parquet"):
        sys.exit(f"error: {args.shard}: not a shard's measurements file (NAME.parquet beside "
                 "NAME.json)")
    if args.workers < 1 or args.chunk < 1:
        sys.exit("error: --workers and --chunk must be at least 1")
    rows = duckdb.connect().execute(
        "SELECT coalesce(build_s, 0), epoch(measured_at) FROM read_parquet(?) "
        "ORDER BY measured_at", [str(args.shard)]).fetchall()
    builds = [float(b) for b, _ in rows]
    span = rows[-1][1] - rows[0][1] if len(rows) > 1 else 0.0
    chunked = chunked_seconds(builds, args.workers, args.chunk)
    streamed = packed_seconds(builds, args.workers)
    print(f"{args.shard.name}: {len(builds)} builds, {sum(builds):.0f} s of building "
          f"(mean {sum(builds) / max(len(builds), 1):.2f} s), {args.workers} workers, "
          f"chunks of {args.chunk}")
    print(f"recorded, first to last measurement: {span:.0f} s "
          f"({60 * (len(builds) - 1) / span if span else 0:.0f} a minute)")
    for name, seconds in (("chunk by chunk (builds only)", chunked),
                          ("building ahead (builds only)", streamed)):
        print(f"{name}: {seconds:.0f} s ({60 * len(builds) / seconds:.0f} a minute)")
    print(f"projected saving: {chunked / streamed:.2f}x on the builds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
