"""bench/learning_curve.py: the shares of a feature_sets.py run group into curves that meet at
the whole data, and the fitted line says what a doubling adds."""

import json

import numpy as np
import pytest

from bench.learning_curve import fit, main, report, series


def _runs(per_doubling: float = 0.05) -> dict[str, list[dict]]:
    """Two seeds a share; top-1 = 0.7 + per_doubling x log2(share) exactly."""
    runs: dict[str, list[dict]] = {}
    for share, kind in ((0.25, "tasks"), (0.5, "tasks"), (1, "tasks"), (0.5, "rows")):
        runs[f"lgbm @{share:g} {kind}"] = [
            {"seed": seed, "train_rows": int(40_000 * share), "train_tasks": 400,
             "mean_network_top1": 0.7 + per_doubling * np.log2(share)} for seed in (0, 1)]
    runs["lgbm"] = runs["lgbm @1 tasks"]  # a variant without a share is not a curve
    return runs


def test_shares_group_into_curves_that_share_the_whole_data():
    curves = series(_runs())
    assert set(curves) == {("lgbm", "tasks"), ("lgbm", "rows")}
    assert [share for share, _ in curves[("lgbm", "tasks")]] == [0.25, 0.5, 1.0]
    assert [share for share, _ in curves[("lgbm", "rows")]] == [0.5, 1.0]


def test_the_line_gives_what_a_doubling_adds_and_the_data_a_target_needs():
    slope, intercept = fit(series(_runs(0.05))[("lgbm", "tasks")])
    assert slope == pytest.approx(0.05)
    table, fits = report(_runs(0.05), target=0.80)
    assert fits[("lgbm", "tasks")][0] == pytest.approx(0.05)
    assert "+0.050" in table and "4.0x (160,000 rows)" in table  # 0.1 more: two doublings


def test_a_run_without_shares_or_a_file_of_something_else_is_refused(tmp_path, monkeypatch):
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"runs": {"lgbm": _runs()["lgbm"]}}))
    other = tmp_path / "other.json"
    other.write_text("[1, 2]")
    for path, message in ((flat, "no variant was run at two or more shares"),
                          (other, "not a bench/feature_sets.py --json output")):
        monkeypatch.setattr("sys.argv", ["learning_curve", "--json", str(path)])
        with pytest.raises(SystemExit, match=message):
            main()


def test_the_plot_is_drawn(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"runs": _runs()}))
    png = tmp_path / "curve.png"
    monkeypatch.setattr("sys.argv", ["learning_curve", "--json", str(run), "--plot", str(png)])
    main()
    assert png.stat().st_size > 10_000 and "per doubling" in capsys.readouterr().out
