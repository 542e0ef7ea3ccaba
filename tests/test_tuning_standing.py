"""bench/tuning_standing.py: a row per CPU and network over several report folders, on made-up
cells whose ratios are worked out by hand."""

import json

import pytest

from bench.tuning_matrix import curve_speedup
from bench.tuning_standing import instant_rows, main, standing_rows

LEARNED = "warm-focus-pop4-w128-online-nchw16c"
XGB = "ms-xgb-nchw16c"


def cell(variant, seed, curve, hardware="cpu-a-1t", network="net", tuned=None, again=None,
         torch=None):
    return {"network": network, "variant": variant, "seed": seed, "curve": curve,
            "trials_budget": 100, "hardware": hardware, "tuned_ms": tuned,
            "tuned_ms_again": again, "torch_ms": torch}


def write(folder, cells):
    (folder / "cells").mkdir(parents=True)
    for c in cells:
        name = f"{c['network']}-{c['variant']}-s{c['seed']}-{c['hardware']}.json"
        (folder / "cells" / name).write_text(json.dumps(c))
    return folder


def test_folders_of_one_cpu_pool_and_other_cpus_get_their_own_row(tmp_path):
    # CPU a, folder 1: XGB ends at 5 ms after 1000 s, the learned cell is there at 200 s
    one = write(tmp_path / "one", [
        cell(XGB, 0, [[10, 100.0, 9.0], [100, 1000.0, 5.0]], tuned=10.0, torch=30.0),
        cell(LEARNED, 0, [[10, 50.0, 6.0], [20, 200.0, 5.0]], tuned=8.0, again=10.0,
             torch=20.0),
        # CPU b in the same folder: XGB at 4 ms after 400 s, learned never below 8 ms
        cell(XGB, 0, [[100, 400.0, 4.0]], hardware="cpu-b-1t", tuned=4.0, torch=8.0),
        cell(LEARNED, 0, [[10, 10.0, 8.0]], hardware="cpu-b-1t", tuned=9.0, torch=8.0)])
    # CPU a, folder 2: XGB ends at 6 ms after 500 s; the learned cell is at 6 ms at 100 s
    two = write(tmp_path / "two", [
        cell(XGB, 0, [[10, 100.0, 9.0], [100, 500.0, 6.0]], tuned=12.0, torch=40.0),
        cell(LEARNED, 0, [[10, 100.0, 6.0], [20, 300.0, 5.0]], tuned=7.0, torch=25.0)])
    a, b = standing_rows([one, two], target=5.0)
    # the pooled rule as in bench/pooled_baselines.py: median final 6 ms reached by XGB in a
    # median 500 s; learned cells at 50 s (10x) and 100 s (5x); own pairs 5x and 5x. Tuned:
    # learned cells 9 (the mean of 8 and 10) and 7 -> 8; XGB 10 and 12 -> 11; PyTorch the
    # median of 30, 20, 40, 25 -> 27.5, so 27.5 / 8 = 3.44x. Along XGB's curves: folder one,
    # 9 ms at 100 s (learned 50 s: 2x) and 5 ms at 1000 s (200 s: 5x) -> 3.5; folder two,
    # 9 ms at 100 s (100 s: 1x) and 6 ms at 500 s (100 s: 5x) -> 3
    assert a == ("cpu-a-1t", "net", 2, "2 / 2", "7.50 (5.00-10.00)", "5.00 (5.00-5.00)", 0,
                 "2 of 2", "3.25 (3.00-3.50)", "-", "8.00 / 11.00", "27.50", "3.44")
    assert b[:4] == ("cpu-b-1t", "net", 1, "1 / 1")
    # CPU b's learned cell never gets to XGB's only point: 0 along the curve
    assert (b[4], b[6], b[7], b[8], b[12]) == ("never", 1, "0 of 1", "0.00", "0.89")


def test_another_search_stands_against_the_same_xgb_runs_and_the_default_ignores_it(tmp_path):
    mix = "warm-focus-pop4-w128-online-mix-nchw16c"
    # XGB ends at 5 ms after 1000 s (seeds 0, 1: median final 5 ms in 1000 s); the default
    # gets there in 500 s (2x), the mix in 100 s and 250 s (10x, 4x); seed 1 has no default
    folder = write(tmp_path / "f", [
        cell(XGB, 0, [[100, 1000.0, 5.0]]), cell(XGB, 1, [[100, 1000.0, 5.0]]),
        cell(LEARNED, 0, [[10, 500.0, 5.0]]),
        cell(mix, 0, [[10, 100.0, 5.0]]), cell(mix, 1, [[10, 250.0, 5.0]])])
    [default] = standing_rows([folder], target=5.0)
    [mixed] = standing_rows([folder], target=5.0, search="warm-focus-pop4-w128-online-mix")
    assert default[3:6] == ("1 / 2", "2.00", "2.00")
    assert mixed[3:8] == ("2 / 2", "7.00 (4.00-10.00)", "7.00 (4.00-10.00)", 0, "1 of 2")
    # a run copied into another folder (to pair it with that folder's cells of its seed)
    # counts once in the pool: the same row, with the copy's folder counted
    copy = write(tmp_path / "copy", [cell(XGB, 1, [[100, 1000.0, 5.0]]),
                                     cell(mix, 1, [[10, 200.0, 5.0]])])
    [again] = standing_rows([folder, copy], target=5.0, search="warm-focus-pop4-w128-online-mix")
    assert again[2:6] == (2, "3 / 2", "5.00 (4.00-10.00)", "5.00 (4.00-10.00)")
    # a folder without the asked search adds no row for it
    assert standing_rows([folder], target=5.0, search="warm-focus-pop4-w128-online-steer") == []


def test_folders_without_the_default_search_are_left_out_and_an_empty_one_refused(tmp_path,
                                                                                  capsys):
    other = write(tmp_path / "other", [cell("ms-xgb", 0, [[10, 10.0, 4.0]]),
                                       cell("learned", 0, [[10, 10.0, 4.0]])])
    with pytest.raises(SystemExit, match=r"none of these folders holds the learned search "
                       r"warm-focus-pop4-w128-online\[-GRAPH\]"):
        main([str(other)])
    (tmp_path / "empty").mkdir()
    with pytest.raises(SystemExit, match="no cells in"):
        main([str(tmp_path / "empty")])
    ok = write(tmp_path / "ok", [cell(XGB, 0, [[100, 400.0, 4.0]]),
                                 cell(LEARNED, 0, [[10, 100.0, 4.0]])])
    main(["--markdown", str(other), str(ok)])
    two = write(tmp_path / "two", [cell(LEARNED, 0, [[10, 100.0, 4.0]]),
                                   cell("warm-focus-pop4-w128-online-nchw8c", 0, [[10, 9.0, 4.0]])])
    with pytest.raises(SystemExit, match="more than one"):
        main([str(two)])
    assert ("| cpu-a-1t | net | 1 | 1 / 1 | 4.00 | 4.00 | 0 | 0 of 1 | 4.00 | - | - / - | - "
            "| - |") in (
        capsys.readouterr().out)


def test_re_timings_in_a_folders_scripts_count_each_once_and_never_ranks_lowest(tmp_path):
    def retiming(seeds, hardware="cpu-a-1t", variant=LEARNED):
        return {"network": "net", "variant": variant, "hardware": hardware,
                "seeds": {str(k): {"retimed": None if v is None else {"speedup": v}}
                          for k, v in seeds.items()}}

    one = write(tmp_path / "one", [cell(XGB, 0, [[100, 400.0, 4.0]]),
                                   cell(LEARNED, 0, [[10, 100.0, 4.0]]),
                                   cell(XGB, 1, [[100, 400.0, 4.0]]),
                                   cell(LEARNED, 1, [[10, 100.0, 4.0]])])
    (one / "scripts").mkdir()
    # seed 0 re-timed twice (both count), seed 1 never reached XGB's final re-timed; another
    # CPU's, another variant's and a JSON that is no re-timing are not this row's
    (one / "scripts" / "retimed-a.json").write_text(json.dumps(retiming({0: 6.0, 1: None})))
    (one / "scripts" / "retimed-b.json").write_text(json.dumps(retiming({0: 2.0})))
    (one / "scripts" / "retimed-c.json").write_text(json.dumps(retiming({0: 9.0}, "cpu-b-1t")))
    (one / "scripts" / "retimed-d.json").write_text(json.dumps(retiming({0: 9.0}, variant=XGB)))
    (one / "scripts" / "other.json").write_text(json.dumps([1, 2]))
    (row,) = standing_rows([one], target=5.0)
    # never, 2, 6 -> the median is 2; the range is the reached ones'
    assert row[9] == "2.00 (2.00-6.00) [1 never] of 3"
    (one / "scripts" / "broken.json").write_text("{not json")
    with pytest.raises(SystemExit, match="broken.json: not readable JSON"):
        standing_rows([one], target=5.0)


def test_the_speedup_along_the_curve_asks_at_every_improvement_within_the_budget():
    base = {"curve": [[10, 100.0, 9.0], [50, 300.0, 7.0], [100, 1000.0, 5.0],
                      [120, 1100.0, 5.0], [150, 2000.0, 4.0]], "trials_budget": 120}
    # 9 ms: 100 / 50 = 2; 7 ms: 300 / 150 = 2; 5 ms: never -> 0. The repeated 5 ms (the closing
    # point) and the 4 ms past the budget are left out: median of 2, 2, 0 = 2
    cell = {"curve": [[10, 50.0, 8.0], [30, 150.0, 6.0]]}
    assert curve_speedup(cell, base) == 2.0
    assert curve_speedup(cell, {"curve": [], "trials_budget": 100}) is None


def test_instant_rows_read_the_search_graphs_instant_cells_against_its_latency(tmp_path, capsys):
    def instant(seed, tuned, torch, search_s, wall_s, variant="instant-share-nchw16c", **kw):
        return {**cell(variant, seed, [], tuned=tuned, torch=torch, **kw),
                "search_s": search_s, "wall_s": wall_s}

    one = write(tmp_path / "one", [
        cell(XGB, 0, [[100, 400.0, 4.0]], tuned=13.0, torch=25.0),
        cell(LEARNED, 0, [[10, 100.0, 4.0]], tuned=10.0, torch=20.0),
        cell(LEARNED, 1, [[10, 100.0, 4.0]], tuned=12.0, torch=30.0),
        instant(0, 11.0, 40.0, 300.0, 400.0),
        instant(1, 16.5, 50.0, 250.0, 350.0),
        # another graph's instant cell is not the search's: left out
        instant(2, 99.0, 1.0, 1.0, 1.0, variant="instant-share-nchw8c"),
        # a CPU with instant cells and no search beside them
        instant(0, 20.0, 30.0, 290.0, 310.0, hardware="cpu-b-1t")])
    a, b = instant_rows([one], within=1.3)
    # learned median 11 ms; instant 11 and 16.5 -> 1.00x and 1.50x of it, one within 1.3x.
    # Over each cell's PyTorch: learned 10/20 and 12/30 -> a median share of 0.45; instant
    # 11/40 = 0.275 and 16.5/50 = 0.33 -> 0.61x and 0.73x of it, both within 1.3x. PyTorch: the
    # instant cells' readings, 40 and 50 -> 45 ms; each over its own cell's tuned network,
    # 40/11 = 3.64x and 50/16.5 = 3.03x -> 3.33x
    assert a == ("cpu-a-1t", "net", 2, "275 (250-300)", "375 (350-400)", "13.75 (11.00-16.50)",
                 "11.00 (2)", "1.25 (1.00-1.50)", "0.67 (0.61-0.73)",
                 "1 / 2 of 2 at 1.3x or less", "45.00", "3.33 (3.03-3.64)")
    assert b == ("cpu-b-1t", "net", 1, "290", "310", "20.00", "- (0)", "-", "-", "-", "30.00",
                 "1.50")
    main(["--instant", "--markdown", str(one)])
    assert "| cpu-a-1t | net | 2 | 275 (250-300) |" in capsys.readouterr().out
    two = write(tmp_path / "two", [instant(0, 1.0, 1.0, 1.0, 1.0),
                                   instant(0, 1.0, 1.0, 1.0, 1.0, variant="instant-share-nchw8c")])
    with pytest.raises(SystemExit, match="instant cells on more than one graph"):
        main(["--instant", str(two)])
    none = write(tmp_path / "none", [cell(XGB, 0, [[100, 400.0, 4.0]]),
                                     cell(LEARNED, 0, [[10, 100.0, 4.0]])])
    with pytest.raises(SystemExit, match="none of these folders holds instant cells"):
        main(["--instant", str(none)])
    with pytest.raises(SystemExit):
        main(["--instant", "--within", "0", str(one)])
    assert "--within must be a factor above 0" in capsys.readouterr().err
