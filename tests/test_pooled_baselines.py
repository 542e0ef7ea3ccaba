"""bench/pooled_baselines.py: the three rows of speedups over several reports, on made-up cells
whose ratios are worked out by hand."""

import json

import pytest

from bench._data import ratio_spread
from bench.pooled_baselines import main, per_seed_rows, pooled_rows


def cell(variant, seed, curve):
    return {"network": "net", "variant": variant, "seed": seed, "curve": curve,
            "trials_budget": 100}


# report A: XGB ends at 5 ms after 1000 s; the learned cell gets to 5 ms at 200 s (5x)
A = [cell("ms-xgb", 0, [[10, 100.0, 9.0], [100, 1000.0, 5.0]]),
     cell("learned", 0, [[10, 50.0, 6.0], [20, 200.0, 5.0]])]
# report B: XGB ends at 6 ms after 500 s; the learned cell gets to 6 ms at 100 s (5x)
B = [cell("ms-xgb", 0, [[10, 100.0, 9.0], [100, 500.0, 6.0]]),
     cell("learned", 0, [[10, 100.0, 6.0], [20, 300.0, 5.0]])]


def test_own_pairs_the_pooled_median_and_every_pair():
    own, pooled, every = pooled_rows([A, B], "learned", target=5.0)
    assert own[1:] == (2, "5.00 (5.00-5.00)", 0, "2 of 2")
    # median final of the two XGB runs: the higher middle, 6 ms; their median time to it: the
    # quicker, 500 s. A's learned cell is at 6 ms at 50 s (10x), B's at 100 s (5x)
    assert pooled[1:] == (2, "7.50 (5.00-10.00)", 0, "2 of 2")
    # A-A 5x, A-B 500/50 = 10x, B-A 1000/300 = 3.33x, B-B 5x
    assert every[1:] == (4, "5.00 (3.33-10.00)", 0, "3 of 4")


def test_per_seed_rows_name_each_cells_own_baseline_and_the_pooled_ratio():
    a, b = per_seed_rows([A, B + [cell("learned", 1, [[10, 20.0, 7.0]])]], ["a", "b"],
                         "learned")[:2]
    # A: XGB ends at 5 ms (100 trials, 1000 s); the learned cell starts at 6 ms after 50 s,
    # gets to 5 ms at trial 20 (200 s): 5x; to the pooled 6 ms (XGB's median time 500 s) at 50 s
    assert a == ("a", 0, "5.00 (100, 1000)", "50, 6.00", "20, 200", "5.00x", "10.00x", "5.00",
                 "- / -", "- / -")
    assert b[1:7] == (0, "6.00 (100, 500)", "100, 6.00", "10, 100", "5.00x", "5.00x")
    lone = per_seed_rows([B + [cell("learned", 1, [[10, 20.0, 7.0]])]], ["b"], "learned")[1]
    # seed 1 has no XGB run of its own, and never gets to the pooled 6 ms
    assert lone[1:7] == (1, "no baseline run", "20, 7.00", "-", "-", "never")


def test_a_cell_that_never_reaches_the_baseline_counts_as_never():
    C = [cell("ms-xgb", 0, [[10, 100.0, 4.0]]), cell("learned", 0, [[10, 10.0, 8.0]])]
    own, _, every = pooled_rows([A, C], "learned", target=5.0)
    # of two ratios, 5x and never, the lower middle is never: the median is never
    assert own[1:] == (2, "never (5.00)", 1, "1 of 2")
    # A's learned cell never gets to C's 4 ms; C's gets to neither XGB run's final
    assert every[3] == 3


def test_the_command_reads_report_folders_and_refuses_an_empty_one(tmp_path, capsys):
    for name, cells in (("a", A), ("b", B)):
        (tmp_path / name / "cells").mkdir(parents=True)
        for c in cells:
            path = tmp_path / name / "cells" / f"net-{c['variant']}-s{c['seed']}.json"
            path.write_text(json.dumps(c))
    main(["--network", "net", "--variant", "learned", "--markdown",
          str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert ("| against the median final of 2 ms-xgb runs | 2 | 7.50 (5.00-10.00) | 0 | 2 of 2 |"
            in out)
    with pytest.raises(SystemExit, match="no cells of other"):
        main(["--network", "other", str(tmp_path / "a")])
    with pytest.raises(SystemExit, match="unknown variant"):
        main(["--network", "net", "--variant", "nope", str(tmp_path / "a")])


def test_the_default_variant_is_the_learned_search_on_the_graph_the_cells_tuned(tmp_path, capsys):
    def folder(name, variants):
        (tmp_path / name / "cells").mkdir(parents=True)
        for v, c in variants.items():
            row = {**c, "variant": v}
            (tmp_path / name / "cells" / f"net-{v}-s0.json").write_text(json.dumps(row))
        return str(tmp_path / name)

    avx2 = folder("avx2", {"ms-xgb-nchw8c": A[0], "warm-focus-pop4-w128-online-nchw8c": A[1]})
    main(["--network", "net", "--markdown", avx2])  # an AVX2 CPU's cells, no --variant
    assert ("| each report's own pairs (same seed) vs ms-xgb-nchw8c | 1 | 5.00 | 0 "
            "| 1 of 1 |") in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no cell variant of the default learned search"):
        main(["--network", "net", folder("none", {"ms-xgb": A[0], "learned": A[1]})])
    both = folder("both", {"warm-focus-pop4-w128-online-nchw8c": A[1],
                           "warm-focus-pop4-w128-online-nchw16c": A[1]})
    with pytest.raises(SystemExit, match="more than one .*name one with --variant"):
        main(["--network", "net", both])


def test_a_speedup_median_ranks_never_below_every_ratio():
    assert ratio_spread([]) == "-"
    assert ratio_spread([None]) == "never"
    assert ratio_spread([None, None]) == "never"
    assert ratio_spread([3.0]) == "3.00"
    assert ratio_spread([4.0, 2.0]) == "3.00 (2.00-4.00)"
    # three seeds, one never: the middle is the lower reached ratio, not their mean
    assert ratio_spread([4.0, None, 2.0]) == "2.00 (2.00-4.00) [1 never]"
    # four: the two middle ones (1 and 2) of never < 1 < 2 < 9
    assert ratio_spread([9.0, None, 2.0, 1.0]) == "1.50 (1.00-9.00) [1 never]"
    assert ratio_spread([None, 5.0, None]) == "never (5.00) [2 never]"
    assert ratio_spread([None, 5.0], count_never=False) == "never (5.00)"
