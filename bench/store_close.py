"""What closing a store costs after a small write, with and without DuckDB's checkpoint.

Collect samples each task in its own connection (tasks.collect.sample_task) and writes a few
candidates. DuckDB folds its write-ahead log into the file when the last connection closes;
on a seed-sized store that checkpoint cost more than the sampling (docs/architecture.md, "Where
the suite's time went"). This copies STORE to a scratch file and, alternating which goes first,
`--rounds` times each:

- `checkpoint`: Store(path) opened, `--candidates` copies of stored candidates (new hashes,
  features and all; read once, before the rounds) inserted in one transaction, closed
  (Store's default);
- `log only`: the same with Store(path, checkpoint=False), which leaves the commit in FILE.wal;

then times the close that folds what the `log only` rounds left (the cost is paid once per
flow, not once per task). Prints the median seconds to open and insert, and to close, per
mode, and the ratio of the closes.

    .venv/bin/python bench/store_close.py --db STORE [--candidates 2] [--rounds 5]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from storage.store import Store
from tasks.sampling import Candidate


def _stored(path: Path, count: int) -> tuple[int, int, list[tuple]]:
    """The first `count` stored candidates with features: (task id, hardware id, rows)."""
    with Store(path, read_only=True) as store:
        rows = store.query(
            "SELECT c.task_id, c.hardware_id, c.trace_json, c.design_space, c.sample_seed, "
            "f.n_stores, f.dim, f.\"values\" FROM candidates c JOIN features f "
            "USING (candidate_id) ORDER BY c.candidate_id LIMIT ?", [count])
    if len(rows) < count:
        raise SystemExit(f"store_close: error: the store has {len(rows)} candidates with "
                         f"features; --candidates {count} needs as many")
    return rows[0][0], rows[0][1], rows


def _round(path: Path, checkpoint: bool, stored: tuple[int, int, list[tuple]],
           tag: str) -> tuple[float, float]:
    """Insert copies of `stored` under new hashes (what collect's sampling writes), then close."""
    task_id, hardware_id, rows = stored
    copies = [Candidate(f"bench-{tag}-{i}", trace, space or 0, seed or 0,
                        np.asarray(values, np.float32).reshape(n_stores, dim))
              for i, (_, _, trace, space, seed, n_stores, dim, values) in enumerate(rows)]
    start = time.perf_counter()
    store = Store(path, checkpoint=checkpoint)
    with store.transaction():
        store.insert_candidates(task_id, hardware_id, copies, source="sampled", extractor="bench")
    written = time.perf_counter()
    store.close()
    return written - start, time.perf_counter() - written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a store to copy (e.g. one the seed loaded)")
    parser.add_argument("--candidates", type=int, default=2, help="inserted per round")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not Path(args.db).is_file():
        raise SystemExit(f"store_close: error: no store at {args.db}; pass --db STORE")
    if args.candidates < 1 or args.rounds < 1:
        raise SystemExit("store_close: error: --candidates and --rounds must be at least 1")
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "store.duckdb"
        shutil.copy(args.db, path)
        size_mb = path.stat().st_size / 2**20
        stored = _stored(path, args.candidates)
        times: dict[str, list[tuple[float, float]]] = {"checkpoint": [], "log only": []}
        for r in range(args.rounds):
            order = ["checkpoint", "log only"] if r % 2 == 0 else ["log only", "checkpoint"]
            for mode in order:
                if mode == "checkpoint" and Path(f"{path}.wal").exists():
                    with Store(path):  # fold the other mode's log first: time only this write
                        pass
                times[mode].append(_round(path, mode == "checkpoint", stored, f"{mode[0]}{r}"))
        fold = time.perf_counter()
        with Store(path):
            pass
        fold_s = time.perf_counter() - fold
    print(f"store {args.db} ({size_mb:.0f} MiB), {args.candidates} candidates per round, "
          f"{args.rounds} rounds a mode, alternating")
    print(f"{'mode':<12} {'open, insert s':>15} {'close s':>9}")
    medians = {}
    for mode, pairs in times.items():
        medians[mode] = (statistics.median(p[0] for p in pairs),
                         statistics.median(p[1] for p in pairs))
        print(f"{mode:<12} {medians[mode][0]:>15.3f} {medians[mode][1]:>9.3f}")
    print(f"close, checkpoint / log only: "
          f"{medians['checkpoint'][1] / max(medians['log only'][1], 1e-6):.0f}x; "
          f"the flow's one close that folds the last log: {fold_s:.3f} s")


if __name__ == "__main__":
    main()
