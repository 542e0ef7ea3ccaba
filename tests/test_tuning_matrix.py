"""bench/tuning_matrix.py's arithmetic: the stored step curve, the search-time speedup, the report
(the cells themselves are hours of tuning; these use made-up curves)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench.tuning_matrix import (
    best_within,
    estimates_at_lines,
    git_commit,
    pooled_speedups,
    reach,
    seconds_grid,
    shared_tasks,
    speedups,
    step_curve,
)
from models.tile_mix import TILE_MIX
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


def test_equal_seconds_take_each_cells_best_estimate_by_then_side_by_side():
    curve = [[10, 100.0, 9.0], [60, 600.0, 5.0], [120, 1200.0, 4.0]]
    assert best_within(curve, 1000, seconds=99.0) is None
    assert best_within(curve, 1000, seconds=600.0) == 5.0
    assert best_within(curve, 1000, seconds=5000.0) == 4.0 and best_within(curve, 60, 5000.0) == 5.0
    # the longest curve (1,900 s) in at most 8 columns: 250 s apart, one past its end
    # a last batch past the trial budget is not shown
    base = cell("ms-xgb", 0, curve + [[991, 1873.0, 3.5], [1005, 1900.0, 3.0]], trials_budget=1000)
    fast = cell("learned", 0, [[10, 80.0, 6.0], [20, 300.0, 4.5]])
    assert seconds_grid([base, fast]) == [250, 500, 750, 1000, 1250, 1500, 1750, 2000]
    assert seconds_grid([fast]) == [50, 100, 150, 200, 250, 300]
    blank = {**cell("instant", 0, [[1, 1.0, 1.0]]), "curve": []}  # no curve: left out
    lines = estimates_at_lines([fast, base, blank])
    rows = [line for line in lines if line.startswith("| 0 | net |")]
    assert rows == [
        "| 0 | net | ms-xgb | 9.00 | 9.00 | 5.00 | 5.00 | 4.00 | 4.00 | 4.00 | 3.50 |",
        "| 0 | net | learned | 6.00 | 4.50 | 4.50 | 4.50 | 4.50 | 4.50 | 4.50 | 4.50 |"]
    assert lines[2] == "| seed | network | variant | " + " | ".join(
        f"{s} s" for s in range(250, 2001, 250)) + " |"
    assert estimates_at_lines([blank]) == []


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
    gains = speedups([base, fast, never, other_seed])
    # the baseline's final is its best within 100 trials (5 ms at 600 s, trial 60)
    assert gains[("net", "learned", 0)] == (4.0, 3.0)
    assert gains[("net", "ms-xgb", 0)] == (1.0, 1.0)
    assert gains[("net", "instant", 0)] == (None, None)
    assert ("net", "learned", 1) not in gains
    # within 25% of the baseline's final (6.25 ms): the baseline got there at 600 s, the
    # learned model at 50 s, instant never
    near = speedups([base, fast, never], slack=1.25)
    assert near[("net", "learned", 0)] == (12.0, 6.0) and near[("net", "instant", 0)][0] is None


def test_a_weak_baseline_seed_cannot_make_a_big_pooled_speedup():
    # XGB's three seeds end at 5, 6 and 9 ms: their median final is 6 ms, which seeds 0 and
    # 1 reach at 500 and 700 s and seed 2 never: the baseline's time is 700 s
    bases = [cell("ms-xgb", 0, [[10, 100.0, 9.0], [50, 500.0, 5.0]]),
             cell("ms-xgb", 1, [[10, 100.0, 9.0], [70, 700.0, 6.0]]),
             cell("ms-xgb", 2, [[10, 100.0, 9.5], [90, 900.0, 9.0]])]
    learned = [cell("learned", 2, [[10, 70.0, 6.0]]), cell("learned", 0, [[10, 50.0, 7.0]])]
    paired, pooled = speedups(bases + learned), pooled_speedups(bases + learned)
    # paired with its own weak seed (9 ms at 900 s), seed 2 would claim 900 / 70
    assert round(paired[("net", "learned", 2)][0], 2) == 12.86
    assert pooled[("net", "learned", 2)] == 10.0  # 700 s / 70 s to 6 ms
    assert pooled[("net", "learned", 0)] is None  # never reached 6 ms
    assert pooled[("net", "ms-xgb", 2)] is None and pooled[("net", "ms-xgb", 1)] == 1.0
    assert pooled_speedups([cell("learned", 0, [[10, 1.0, 1.0]])]) == {}  # no baseline


def test_the_report_writes_the_table_and_refuses_an_empty_folder(tmp_path):
    cells = tmp_path / "cells"
    cells.mkdir()
    script = [sys.executable, str(ROOT / "bench" / "tuning_matrix.py"), "--report", "--out",
              str(tmp_path)]
    empty = subprocess.run(script, capture_output=True, text=True)
    assert empty.returncode != 0 and "no cells under" in empty.stderr
    for row in (cell("ms-xgb", 0, [[10, 100.0, 9.0], [60, 600.0, 5.0]]),
                cell("learned", 0, [[10, 50.0, 6.0], [20, 150.0, 5.0]]),
                cell("ms-xgb-nchw8c", 0, [[10, 100.0, 8.0], [60, 300.0, 5.0]]),
                cell("instant-share-nchw8c", 0, [[10, 20.0, 5.0]]),
                cell("lean-nchw8c", 0, [[10, 50.0, 5.0]]),
                cell("instant-share-nchw16c", 0, [[10, 40.0, 5.0]])):  # the last plots too
        (cells / f"net-{row['variant']}-s0.json").write_text(json.dumps(row))
    done = subprocess.run(script, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    table = (tmp_path / "README.md").read_text()
    assert "| net | learned | 0 | 2.00 | 3.00 | 1.50 | 1.50 |" in table
    assert "4.00" in table  # the search-time speedup: 600 s / 150 s
    # no second timing in these cells: the last two columns are the one timing's
    assert "| 2.00 | 1.50 |" in next(line for line in table.splitlines()
                                      if line.startswith("| net | learned |"))
    speedup = {line.split(" | ")[1]: line.split(" | ")[10] for line in table.splitlines()
               if line.startswith("| net | ")}
    # against MetaSchedule's XGB on its own graph: 300 s / 20 s; that one against NCHW's 600 s
    assert speedup == {"ms-xgb": "1.00", "learned": "4.00", "ms-xgb-nchw8c": "2.00",
                       "instant-share-nchw8c": "15.00", "lean-nchw8c": "6.00",
                       "instant-share-nchw16c": "15.00"}  # no ms-xgb-nchw16c: against NCHW
    assert (tmp_path / "curves.png").stat().st_size > 0
    assert "| 0 | net | learned | 6.00 | 5.00 |" in table  # its estimates at 50 and 100 s
    # another CPU's matrix without the NCHW baseline: its ms-xgb-nchw8c has nothing to beat
    for name in ("ms-xgb", "learned"):
        (cells / f"net-{name}-s0.json").unlink()
    assert subprocess.run(script, capture_output=True, text=True).returncode == 0
    table = (tmp_path / "README.md").read_text()
    speedup = {line.split(" | ")[1]: line.split(" | ")[10] for line in table.splitlines()
               if line.startswith("| net | ")}
    assert speedup["ms-xgb-nchw8c"] == "no baseline" and speedup["lean-nchw8c"] == "6.00"


def test_shared_tasks_counts_layers_a_held_out_network_shares_with_training_ones(seed_store):
    shared, total, share = shared_tasks(seed_store, "resnet18", ["resnet50"])
    assert 0 < shared < total and 0 < share <= 1  # ResNet-50's 3x3 convolutions are ResNet-18's
    assert shared_tasks(seed_store, "resnet18", []) == (0, total, 0.0)


def test_the_other_cpus_busy_share_counts_only_cpus_outside_the_affinity():
    from bench.cpu_contention import busy_share, other_cpu_ticks
    from bench.tuning_matrix import neighbours

    # cpuN user nice system idle iowait irq softirq steal
    before = "cpu 9 9 9 9 9 9 9 9\ncpu0 100 0 0 900 0 0 0 0\ncpu1 50 0 50 900 0 0 0 0\n"
    after = "cpu 9 9 9 9 9 9 9 9\ncpu0 200 0 0 900 0 0 0 0\ncpu1 80 0 70 940 10 0 0 0\n"
    start, end = other_cpu_ticks(before, mine={0}), other_cpu_ticks(after, mine={0})
    assert start == (100, 1000) and end == (150, 1100)
    assert busy_share(start, end) == 0.5  # cpu1: 50 of 100 ticks busy; cpu0 is ours
    assert other_cpu_ticks(before, mine={0, 1}) is None  # nothing outside: nothing to say
    assert busy_share(None, end) is None
    cells = [{"other_cpus_busy": {"search": 0.05, "timing": 0.6}}, {}]
    assert neighbours(cells) == "5% / 60% suspect"
    assert neighbours([{}]) == "n/a / n/a"
    cells.append({"other_cpus_busy": {"search": 0.72, "timing": 0.01}})
    assert neighbours(cells) == "72% suspect / 60% suspect"


def test_the_report_names_cells_that_searched_beside_a_busy_vcpu():
    from bench.tuning_matrix import busy_searches

    cells = [{"network": "mobilenet_v2", "variant": "ms-xgb-nchw16c", "seed": 1,
              "search_s": 895.5, "other_cpus_busy": {"search": 0.724, "timing": 0.006}},
             {"network": "mobilenet_v2", "variant": "ms-xgb-nchw16c", "seed": 2,
              "search_s": 649.2, "other_cpus_busy": {"search": 0.007, "timing": 0.004}},
             {"network": "bert", "variant": "warm", "seed": 0, "search_s": 500.0}]  # older
    assert busy_searches(cells) == [
        ("Cells that searched with the other vCPUs more than 25% busy (their search-time "
         "speedups are suspect: rerun them): 1:"),
        "- mobilenet_v2 ms-xgb-nchw16c s1: 72% busy, 896 s"]
    assert busy_searches(cells[1:])[0].endswith(": 0.")


def test_a_cells_write_back_has_a_stable_run_id_and_skips_a_cell_without_its_database(
        tmp_path):
    from bench.matrix_writeback import cell_parameters, cell_run_id, write_back_cells

    cell = {"network": "resnet18", "variant": "learned", "seed": 1, "hardware": "cpu-x-1t",
            "trials_budget": 1000, "minutes": 60, "trials": 1017, "tuned_ms": 69.1,
            "model": {"model_id": "lgbm-1"},
            "provenance": {"started": "2026-11-23T20:27:01", "commit": "abc"}}
    assert cell_run_id(cell) == cell_run_id(dict(cell))
    assert cell_run_id(cell) != cell_run_id({**cell, "seed": 2})
    assert len(cell_run_id(cell)) == 36  # shaped like a flow run's id (shard names use it)
    params = cell_parameters(cell)
    assert params["cost_model"] == "lgbm-1" and params["scheduler"] == "gradient"
    assert cell_parameters({**cell, "variant": "ms-xgb", "model": None})["cost_model"] == \
        "metaschedule-xgb"
    assert cell_parameters({**cell, "variant": "instant-share"})["scheduler"] == "instant"
    nhwc = cell_parameters({**cell, "variant": "warm-nhwc", "graph": "nhwc", "warm_start": 4})
    assert (nhwc["graph"], nhwc["warm_start"], nhwc["scheduler"]) == ("nhwc", 4, "gradient")
    assert params["graph"] == "exported"  # a cell from before cells named their graph
    (tmp_path / "out" / "cells").mkdir(parents=True)
    (tmp_path / "out" / "cells" / "resnet18-learned-s1.json").write_text(json.dumps(cell))
    said = []
    assert write_back_cells(tmp_path / "out", tmp_path / "work", str(tmp_path / "s.duckdb"),
                            report=said.append) == []
    assert said and "no tuning database" in said[0]


def test_waiting_for_quiet_waits_out_a_busy_neighbour_and_gives_up_at_its_timeout():
    from bench.cpu_contention import wait_for_quiet
    from bench.tuning_matrix import joined

    readings = iter([(0, 0), (90, 100), (90, 100), (95, 200), (95, 200), (195, 300)])
    waited = wait_for_quiet(max_busy=0.1, window_s=5, sleep=lambda s: None,
                            ticks=lambda: next(readings))
    assert waited == 5  # one busy window (90%), then a quiet one (5%)
    always_busy = wait_for_quiet(max_busy=0.1, window_s=5, timeout_s=20, sleep=lambda s: None,
                                 ticks=iter([(i * 100, i * 100) for i in range(20)]).__next__)
    assert always_busy == 15  # four windows, the last one at the timeout
    assert joined((0, 0), (10, 100), (50, 500), (80, 600)) == ((0, 0), (40, 200))
    assert joined(None, (10, 100), (50, 500), (80, 600)) == (None, None)


def test_a_held_out_network_takes_its_prepared_graphs_out_of_training_with_it():
    from bench.tuning_matrix import training_networks

    stored = ["bert", "resnet18", "resnet18+nhwc", "resnet50", "resnet50+nhwc", "vgg11"]
    assert training_networks(stored, ["resnet18", "bert"]) == ["resnet50", "resnet50+nhwc",
                                                               "vgg11"]


def test_a_cells_graph_follows_its_variant_then_the_folded_networks():
    from bench.tuning_matrix import cell_graph

    assert cell_graph("bert", "learned", "bert") == "folded"
    assert cell_graph("resnet18", "learned", "bert") == "exported"
    assert cell_graph("resnet18", "warm-nhwc", "bert") == "nhwc"
    assert cell_graph("bert", "ms-xgb", "") == "exported"
    assert cell_graph("resnet18", "ms-xgb-nchw8c", "bert") == "nchw8c"
    assert cell_graph("resnet18", "lean-nchw16c", "bert") == "nchw16c"
    assert cell_graph("resnet18", "warm-nchw16c", "bert") == "nchw16c"
    assert cell_graph("bert", "warm-focus-pop4-w128-online-packed16", "bert") == "packed16"
    assert cell_graph("bert", "ms-xgb-packed8", "bert") == "packed8"


def test_a_graph_variant_is_measured_against_ms_xgb_on_its_own_graph_where_there_is_one():
    from bench.tuning_matrix import baseline_of

    both = {"ms-xgb", "ms-xgb-nchw8c", "learned-nchw8c", "warm-nhwc"}
    assert baseline_of("learned-nchw8c", both) == "ms-xgb-nchw8c"
    assert baseline_of("ms-xgb-nchw8c", both) == "ms-xgb"
    assert baseline_of("warm-nhwc", both) == "ms-xgb"  # no ms-xgb-nhwc in the matrix
    assert baseline_of("learned-nchw8c", {"ms-xgb", "learned-nchw8c"}) == "ms-xgb"
    assert baseline_of("lean-nchw16c", {"ms-xgb-nchw16c", "lean-nchw16c"}) == "ms-xgb-nchw16c"
    assert baseline_of("learned", both) == "ms-xgb"
    packed = {"ms-xgb-nchw16c", "ms-xgb-packed16", "instant-share-packed16"}
    assert baseline_of("instant-share-packed16", packed) == "ms-xgb-packed16"


def test_only_the_ms_xgb_variants_tune_without_a_learned_model():
    from bench.tuning_matrix import VARIANTS, uses_ms_xgb

    assert [v for v in VARIANTS if uses_ms_xgb(v)] == ["ms-xgb", "ms-xgb-nchw8c",
                                                       "ms-xgb-nchw16c", "ms-xgb-ovl",
                                                       "ms-xgb-ovl-nchw8c", "ms-xgb-ovl-nchw16c",
                                                       "ms-xgb-packed8", "ms-xgb-packed16"]


def test_the_online16_variants_hand_a_task_to_its_online_model_sooner():
    from bench.tuning_matrix import ONLINE_HALF_EARLY, baseline_of, main_parser, search_settings
    from tasks.tuning.run import ONLINE_HALF

    args = main_parser().parse_args([])  # the bench's own defaults
    early = search_settings("warm-focus-pop4-w128-online16-nchw16c", args)
    assert early["online"] == ONLINE_HALF_EARLY < ONLINE_HALF
    assert search_settings("warm-focus-pop4-w128-online-nchw16c", args)["online"] == ONLINE_HALF
    assert early["warm_samples"] == 128 and early["population_ratio"] == 4
    assert baseline_of("warm-focus-pop4-w128-online16-nchw16c",
                       {"ms-xgb-nchw16c"}) == "ms-xgb-nchw16c"


def test_the_preq_variants_weigh_each_tasks_online_model_by_its_own_batches():
    from bench.tuning_matrix import baseline_of, main_parser, search_settings
    from tasks.tuning.run import ONLINE_HALF

    args = main_parser().parse_args([])
    preq = search_settings("warm-focus-pop4-w128-online-preq-nchw16c", args)
    assert preq["online_blend"] == "prequential" and preq["online"] == ONLINE_HALF
    assert search_settings("warm-focus-pop4-w128-online-nchw16c", args)["online_blend"] == "count"
    assert baseline_of("warm-focus-pop4-w128-online-preq-nchw16c",
                       {"ms-xgb-nchw16c"}) == "ms-xgb-nchw16c"


def test_the_ovl_variants_overlap_builds_and_are_measured_against_lock_step_xgb():
    from bench.tuning_matrix import baseline_of, main_parser, search_settings

    args = main_parser().parse_args([])  # the bench's own defaults
    assert search_settings("warm-focus-pop4-w128-online-ovl-nchw16c", args)["overlap_builds"]
    assert not search_settings("warm-focus-pop4-w128-online-nchw16c", args)["overlap_builds"]
    present = {"ms-xgb-nchw16c", "ms-xgb-ovl-nchw16c", "warm-focus-pop4-w128-online-ovl-nchw16c"}
    assert baseline_of("warm-focus-pop4-w128-online-ovl-nchw16c", present) == "ms-xgb-nchw16c"
    assert baseline_of("ms-xgb-ovl-nchw16c", present) == "ms-xgb-nchw16c"


def test_the_report_names_cells_whose_two_timings_disagree():
    from bench.tuning_matrix import timing_disagreements

    cells = [{"network": "resnet18", "variant": "warm", "seed": 0, "tuned_ms": 70.0,
              "tuned_ms_again": 72.0},
             {"network": "resnet18", "variant": "instant-share", "seed": 2, "tuned_ms": 91.37,
              "tuned_ms_again": 75.47},
             {"network": "bert", "variant": "warm", "seed": 0, "tuned_ms": 500.0}]  # older
    assert timing_disagreements(cells) == [
        "Timed twice (the tuned network again after PyTorch): 2 cells; 1 more than 10% apart:",
        "- resnet18 instant-share s2: 91.37 ms, then 75.47"]


def test_a_cells_both_timings_are_averaged_and_an_older_cells_one_stands():
    from bench.tuning_matrix import both_timings_ms

    assert both_timings_ms({"tuned_ms": 70.0, "tuned_ms_again": 80.0}) == 75.0
    assert both_timings_ms({"tuned_ms": 70.0}) == 70.0
    assert both_timings_ms({"tuned_ms": 70.0, "tuned_ms_again": None}) == 70.0


def test_each_variant_sets_only_its_own_search_setting():
    from bench.tuning_matrix import VARIANTS, cell_graph, main_parser, search_settings

    def without(settings: dict, key: str) -> dict:  # every other setting, to compare with w128's
        return {k: v for k, v in settings.items() if k != key}

    args = main_parser().parse_args(["--lean-batch", "6", "--warm", "3"])
    lean = search_settings("lean-nchw8c", args)
    assert lean["trials_per_iter"] == 6 and lean["warm_start"] is None
    assert lean["scheduler"] == "gradient" and lean["trials"] == args.trials
    assert search_settings("learned", args)["trials_per_iter"] is None  # tuning's default
    assert search_settings("warm", args)["warm_start"] == 3
    assert search_settings("warm-nchw16c", args)["warm_start"] == 3
    # warm keeps the blind first pass its cells were run with; warm-focus skips it
    assert search_settings("warm-nchw16c", args)["warm_focus"] is False
    focus = search_settings("warm-focus-nchw16c", args)
    assert focus["warm_focus"] is True and focus["warm_start"] == 3
    assert focus["population_ratio"] == 8  # MetaSchedule's ratio, as every other variant
    narrow = search_settings("warm-focus-pop4-nchw16c", args)
    assert narrow["population_ratio"] == 4 and narrow["warm_focus"] is True
    assert narrow["genetic_iters"] == 4 == focus["genetic_iters"]  # MetaSchedule's
    short = search_settings("warm-focus-pop4-g2-nchw16c", args)
    assert short["genetic_iters"] == 2 and short["population_ratio"] == 4
    assert short["warm_samples"] == narrow["warm_samples"] == 256  # as their cells ran
    cheap = search_settings("warm-focus-pop4-w128-nchw16c", args)
    assert cheap["warm_samples"] == 128 and cheap["genetic_iters"] == 4
    assert search_settings("warm-focus-pop4-w64-nchw16c", args)["warm_samples"] == 64
    spread = search_settings("warm-focus-pop4-wshare-nchw16c", args)
    assert spread["warm_samples"] == 64 and spread["warm_share"] and not cheap["warm_share"]
    shared = search_settings("warm-focus-pop4-wshare128-online-packed16", args)
    assert shared["warm_samples"] == 128 and shared["warm_share"] and shared["online"]
    assert cell_graph("bert", "warm-focus-pop4-wshare128-online-packed16", "") == "packed16"
    assert search_settings("warm-focus-pop4-wshare256-online-packed16", args)["warm_samples"] == 256
    assert search_settings("warm-focus-pop4-g2-nchw16c", args)["warm_samples"] == 256  # default
    bred = search_settings("warm-focus-pop4-wshare128-online-evo-packed16", args)
    assert without(bred, "warm_evolve") == without(shared, "warm_evolve") and bred["warm_evolve"]
    spread_warm = search_settings("warm-focus-pop4-w128-online-spread-nchw16c", args)
    assert spread_warm["warm_spread"] and not cheap["warm_spread"]
    assert spread_warm["warm_samples"] == 128 and spread_warm["online_blend"] == "count"
    mixed = search_settings("warm-focus-pop4-w128-online-mix-nchw16c", args)
    assert mixed["tile_mix"] == TILE_MIX and cheap["tile_mix"] is None
    default = search_settings("warm-focus-pop4-w128-online-nchw16c", args)
    assert without(mixed, "tile_mix") == without(default, "tile_mix")
    steer = search_settings("warm-focus-pop4-w128-online-steer-nchw16c", args)
    assert steer["tile_mix"] == TILE_MIX and steer["tile_steer"] and not mixed["tile_steer"]
    assert without(steer, "tile_steer") == without(mixed, "tile_steer")
    wide = search_settings("warm-focus-pop4-w128-b2x-nchw16c", args)
    assert wide["round_scale"] == 2 and cheap["round_scale"] == 1
    assert search_settings("warm-focus-pop4-w128-bhalf-nchw16c", args)["round_scale"] == 0.5
    assert without(wide, "round_scale") == without(cheap, "round_scale")
    assert cell_graph("net", "warm-focus-pop4-w128-b2x-nchw16c", "") == "nchw16c"
    often = search_settings("warm-focus-pop4-w128-r13-nchw16c", args)
    assert often["refit_every"] == 13 and cheap["refit_every"] is None  # None: REFIT_EVERY
    assert without(often, "refit_every") == without(cheap, "refit_every")
    assert "warm-focus-pop4-w128-gain-nchw16c" in VARIANTS  # a cell of it can be asked for
    assert "warm-focus-pop4-w128-g2-nchw16c" in VARIANTS
    lighter = search_settings("warm-focus-pop4-w128-g2-nchw16c", args)
    assert lighter["genetic_iters"] == 2 and lighter["warm_samples"] == 128
    assert without(lighter, "genetic_iters") == without(cheap, "genetic_iters")
    greedy = search_settings("warm-focus-pop4-w128-gain-nchw16c", args)
    assert greedy["scheduler"] == "gain" and cheap["scheduler"] == "gradient"
    assert without(greedy, "scheduler") == without(cheap, "scheduler")
    assert short["warm_focus"] is True and cell_graph("net", "warm-focus-pop4-g2-nchw16c",
                                                      "") == "nchw16c"
    blended = search_settings("warm-focus-pop4-w128-online-nchw16c", args)
    assert blended["online"] and cheap["online"] is None  # explicit: tune_network's is on
    assert not blended["warm_by_trials"] and not cheap["warm_by_trials"]
    counted = search_settings("warm-focus-pop4-w128-online-wt-nchw16c", args)
    assert counted["warm_by_trials"]
    assert without(counted, "warm_by_trials") == without(blended, "warm_by_trials")
    share = search_settings("instant-share-nchw8c", args)
    assert share["scheduler"] == "instant" and share["trials"] == args.instant_trials
    assert share["minutes"] == args.instant_minutes


def test_a_pytorch_reading_far_from_its_networks_median_is_named():
    from bench.tuning_matrix import network_torch_ms, torch_outliers

    cells = [{"network": "net", "variant": v, "seed": 0, "torch_ms": ms, "tuned_ms": 50.0}
             for v, ms in (("ms-xgb", 58.0), ("learned", 60.0), ("warm", 70.2))]
    median = network_torch_ms(cells)
    assert median == {"net": 60.0}
    lines = torch_outliers(cells, median)
    assert lines[0].endswith("net 60.00 ms): 1:")
    assert lines[1:] == ["- net warm s0: PyTorch 70.20 ms, tuned 50.00"]


def test_two_baseline_seeds_give_a_pooled_speedup_too():
    # XGB's two seeds end at 5 and 6 ms: the mean, 5.5 ms, is reached by one seed only; the
    # higher final, 6 ms, by both (at 300 and 700 s): the quicker, 300 s, is the baseline's time
    bases = [cell("ms-xgb", 0, [[10, 100.0, 9.0], [30, 300.0, 6.0], [50, 500.0, 5.0]]),
             cell("ms-xgb", 1, [[10, 100.0, 9.0], [70, 700.0, 6.0]])]
    learned = [cell("learned", 0, [[10, 60.0, 6.0]])]
    pooled = pooled_speedups(bases + learned)
    assert pooled[("net", "learned", 0)] == 5.0
    assert pooled[("net", "ms-xgb", 1)] == 300.0 / 700.0


def test_extra_shards_load_into_the_work_store_once_and_key_new_models(seed_store, tmp_path,
                                                                       capsys):
    from bench.tuning_matrix import collect, ingested_digest, main_parser

    work = tmp_path / "work"
    work.mkdir()
    db = str(work / "seed.duckdb")
    shutil.copy(seed_store, db)
    assert ingested_digest(db) is None  # the seed alone: the key earlier work folders used
    extra = tmp_path / "extra"
    extra.mkdir()
    stem = "20261127T000830-convnext-74b16720"  # one of dataset/extra's shards
    for suffix in (".json", ".parquet", ".tasks.parquet"):
        shutil.copy(ROOT / "dataset/extra/znver4-20261127-s38" / f"{stem}{suffix}", extra)
    args = main_parser().parse_args(["--networks", "", "--variants", "ms-xgb", "--seeds", "0",
                                     "--work", str(work), "--out", str(tmp_path / "out"),
                                     "--extra", str(extra)])
    collect(args)
    assert "--extra: 1 new shard(s) of 1" in capsys.readouterr().out
    digest = ingested_digest(db)
    assert digest is not None  # a model trained before the shards came is not reused
    collect(args)  # a resumed matrix loads nothing twice
    assert "--extra: 0 new shard(s) of 1" in capsys.readouterr().out
    assert ingested_digest(db) == digest


def test_the_learned_cells_graphs_are_stored_so_a_model_holds_their_tasks_out(seed_store,
                                                                             tmp_path):
    """A graph no shard holds for the held-out network (bert+packed16) is still what another
    network measured (gpt2+packed16 has BERT's dense layers): the matrix stores each learned
    cell's graph first, so drop_tasks_of finds its tasks; ms-xgb cells need no model."""
    from bench.tuning_matrix import register_tuned_graphs
    from models.dataset import DataSpec, load_dataset
    from models.splits import rows_of_networks
    from storage.queries import stored_network_tasks
    from storage.store import Store
    from tasks.hardware import resolve_profile
    from tests.conftest import SMALL_SEED_PROFILE

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    profile = resolve_profile("local-1t")  # whatever this machine is: nothing is measured
    todo = [(0, "dense_bias_relu", "warm-focus-pop4-w128-online-packed16"),
            (1, "dense_bias_relu", "warm-focus-pop4-w128-online-packed16"),
            (0, "tiny_cnn", "ms-xgb-packed16")]
    assert register_tuned_graphs(db, profile, todo, "") == ["dense_bias_relu+packed16"]
    with Store(db, read_only=True) as store:
        tasks = stored_network_tasks(store, "dense_bias_relu+packed16", 1, 512)
        assert tasks and not stored_network_tasks(store, "tiny_cnn+packed16", 1, 32)
    data = load_dataset(db, DataSpec(hardware=(SMALL_SEED_PROFILE,)))
    held = {w for w, nets in data.workload_networks.items() if "dense_bias_relu+packed16" in nets}
    assert len(held) == len(tasks)  # the split sees them under the held-out family now
    assert not rows_of_networks(data, ["dense_bias_relu"]).any()  # (nothing measured yet)
    # a second matrix run imports nothing again
    assert register_tuned_graphs(db, profile, todo, "") == ["dense_bias_relu+packed16"]
    with Store(db, read_only=True) as store:
        assert stored_network_tasks(store, "dense_bias_relu+packed16", 1, 512) == tasks


def test_extra_beside_a_db_is_refused_in_one_line(tmp_path):
    from bench.tuning_matrix import collect, main_parser

    args = main_parser().parse_args(["--db", str(tmp_path / "store.duckdb"), "--extra",
                                     str(ROOT / "dataset/extra/znver4-20261127-s38"),
                                     "--work", str(tmp_path / "work"), "--networks", ""])
    with pytest.raises(SystemExit, match="tenforge ingest"):
        collect(args)
    assert not (tmp_path / "store.duckdb").exists()  # nothing written


def test_bad_params_are_refused_in_one_line_before_the_store_loads(tmp_path):
    from bench.tuning_matrix import collect, main_parser

    args = main_parser().parse_args(["--params", "{trace_features: true}", "--work",
                                     str(tmp_path / "work"), "--networks", "resnet18"])
    with pytest.raises(SystemExit, match="--params is not JSON"):
        collect(args)
    assert not (tmp_path / "work").exists()  # nothing made, nothing loaded


def test_a_cells_commit_is_its_code_checkouts_not_the_working_directorys(tmp_path, monkeypatch):
    def head(folder):
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, text=True,
                              capture_output=True).stdout.strip()

    # Another repository as the working directory, as when a worktree's bench runs from main.
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "other"], cwd=tmp_path,
                   check=True)
    monkeypatch.chdir(tmp_path)
    assert git_commit() == (head(ROOT) or "unknown") != head(tmp_path)


def test_pytorch_is_the_median_of_several_fresh_processes():
    from bench.tuning_matrix import TORCH_PROCESSES, torch_ms_median

    readings = iter([80.0, 63.8, 67.9, 99.0])
    calls = []

    def time_one(network, threads, runs):
        calls.append((network, threads, runs))
        return next(readings)

    median, seen = torch_ms_median("resnet18", 1, time_one)
    assert TORCH_PROCESSES == 3
    assert seen == [80.0, 63.8, 67.9] and median == 67.9
    assert calls == [("resnet18", 1, 30)] * 3


def test_a_host_that_changed_speed_during_a_search_is_named():
    from bench.tuning_matrix import host_drift

    cells = [{"network": "net", "variant": "a", "seed": 0, "torch_ms": 90.0,
              "torch_ms_before": 65.0},
             {"network": "net", "variant": "b", "seed": 0, "torch_ms": 66.0,
              "torch_ms_before": 65.0},
             {"network": "net", "variant": "c", "seed": 1, "torch_ms": 90.0}]  # older cell
    lines = host_drift(cells)
    assert lines[0].endswith("2 cells; 1 more than 10% apart:")
    assert lines[1:] == ["- net a s0: 65.00 ms, then 90.00"]
    assert host_drift(cells[1:])[0].endswith("1 cells; 0 more than 10% apart.")
