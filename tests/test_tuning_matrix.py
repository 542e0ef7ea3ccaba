"""bench/tuning_matrix.py's arithmetic: the stored step curve, the search-time speedup, the report
(the cells themselves are hours of tuning; these use made-up curves)."""

import json
import subprocess
import sys
from pathlib import Path

from bench.tuning_matrix import best_within, reach, shared_tasks, speedups, step_curve
from tasks.tuning.log import CurvePoint

ROOT = Path(__file__).resolve().parents[1]


def points(*rows):
    return [CurvePoint(trials, wall, "t", 0.0, est) for trials, wall, est in rows]


def test_the_step_curve_keeps_improvements_and_the_last_point():
    curve = step_curve(points((1, 1.0, None), (2, 2.0, 0.010), (3, 3.0, 0.012),
                              (4, 4.0, 0.008), (5, 5.0, 0.009)))
    assert curve == [[2, 2.0, 10.0], [4, 4.0, 8.0], [5, 5.0, 8.0]]
    assert reach(curve, 9.0) == (4, 4.0) and reach(curve, 7.0) is None
    assert best_within(curve, 3) == 10.0 and best_within(curve, 1) is None


def cell(variant, seed, curve, **extra):
    return {"network": "net", "variant": variant, "seed": seed, "curve": curve,
            "trials_budget": 100, "trials": curve[-1][0], "search_s": curve[-1][1],
            "tuned_ms": 2.0, "torch_ms": 3.0, "stop_reason": "trials", "tuned_functions": 3,
            "tir_functions": 4, "hardware": "cpu-x", "threads": 1, "minutes": 60,
            "provenance": {"cpu": "cpu", "tvm": "0.27"}, **extra}


def test_speedup_is_against_the_baselines_best_within_its_budget_same_seed():
    base = cell("ms-xgb", 0, [[10, 100.0, 9.0], [60, 600.0, 5.0], [120, 1200.0, 4.0]])
    fast = cell("learned", 0, [[10, 50.0, 6.0], [20, 150.0, 5.0]])
    never = cell("instant", 0, [[16, 30.0, 7.0]])
    other_seed = cell("learned", 1, [[10, 10.0, 1.0]])  # no baseline of seed 1: no ratio
    gains = speedups([base, fast, never, other_seed], "ms-xgb")
    # the baseline's final is its best within 100 trials (5 ms at 600 s, trial 60)
    assert gains[("net", "learned", 0)] == (4.0, 3.0)
    assert gains[("net", "ms-xgb", 0)] == (1.0, 1.0)
    assert gains[("net", "instant", 0)] == (None, None)
    assert ("net", "learned", 1) not in gains
    # within 25% of the baseline's final (6.25 ms): the baseline got there at 600 s, the
    # learned model at 50 s, instant never
    near = speedups([base, fast, never], "ms-xgb", slack=1.25)
    assert near[("net", "learned", 0)] == (12.0, 6.0) and near[("net", "instant", 0)][0] is None


def test_the_report_writes_the_table_and_refuses_an_empty_folder(tmp_path):
    cells = tmp_path / "cells"
    cells.mkdir()
    script = [sys.executable, str(ROOT / "bench" / "tuning_matrix.py"), "--report", "--out",
              str(tmp_path)]
    empty = subprocess.run(script, capture_output=True, text=True)
    assert empty.returncode != 0 and "no cells under" in empty.stderr
    for row in (cell("ms-xgb", 0, [[10, 100.0, 9.0], [60, 600.0, 5.0]]),
                cell("learned", 0, [[10, 50.0, 6.0], [20, 150.0, 5.0]])):
        (cells / f"net-{row['variant']}-s0.json").write_text(json.dumps(row))
    done = subprocess.run(script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "README.md").read_text()
    assert "| net | learned | 0 | 2.00 | 3.00 | 1.50 |" in table
    assert "4.00" in table  # the search-time speedup: 600 s / 150 s
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_shared_tasks_counts_layers_a_held_out_network_shares_with_training_ones(seed_store):
    shared, total, share = shared_tasks(seed_store, "resnet18", ["resnet50"])
    assert 0 < shared < total and 0 < share <= 1  # ResNet-50's 3x3 convolutions are ResNet-18's
    assert shared_tasks(seed_store, "resnet18", []) == (0, total, 0.0)
