"""bench/allocation_spread.py: each task's best valid record is found and its schedule times on
several input allocations (a real build of a tiny matmul)."""

import numpy as np

from bench.allocation_spread import best_records, spread
from core.tvm_env import load_tvm
from tests.test_task_bests import _database


def test_each_tasks_best_valid_record_is_built_and_timed_on_each_allocation(tmp_path):
    folder = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6], 16: [9e-6, 1e10]})
    best = sorted(best_records(folder), key=lambda r: float(r.run_secs[0]))
    assert [float(r.run_secs[0]) for r in best] == [2e-6, 9e-6]
    tvm = load_tvm("llvm")
    row = spread(tvm, best[0], tvm.target.Target("llvm"), allocations=3, repeat=2,
                 rng=np.random.default_rng(0))
    assert row["shapes"] == [(4, 8), (8, 8), (4, 8)]
    assert 0 < row["fastest"] <= row["slowest"] and row["recorded"] == 2e-3
