"""bench/tensor_cores.py: each task's best tensor-core candidate against its best SIMT one."""

import pytest

from bench.tensor_cores import compare, main, summary


def _row(task, candidate, tensor_cores, latency_s, network="net", weight=1):
    return {"task": task, "gflops": 0.5, "network": network, "weight": weight,
            "candidate": candidate, "tensor_cores": tensor_cores, "latency_s": latency_s}


def test_best_of_each_kind_failures_and_tasks_without_both_kinds():
    rows = [_row("conv", 1, True, 10e-6), _row("conv", 2, True, None),
            _row("conv", 3, False, 40e-6),
            _row("conv", 4, False, 30e-6, network="other", weight=2),
            _row("matmul", 5, True, 20e-6), _row("matmul", 6, False, 10e-6),
            _row("add", 7, False, 1e-6)]  # no tensor-core candidate: not compared
    got = {c.task: c for c in compare(rows)}
    assert sorted(got) == ["conv", "matmul"]
    conv = got["conv"]
    assert (conv.wmma.measured, conv.wmma.valid, conv.simt.valid) == (2, 1, 2)
    assert conv.gain == pytest.approx(3.0) and got["matmul"].gain == pytest.approx(0.5)
    s = summary(list(got.values()))
    assert s["tasks_with_both"] == 2 and s["simt_faster"] == 1
    assert s["geomean_gain"] == pytest.approx((3.0 * 0.5) ** 0.5)
    assert s["valid_share"] == {"wmma": pytest.approx(2 / 3), "simt": 1.0}
    # per network: occurrences x best latency, over the tasks it has
    assert s["networks"]["net"]["wmma_ms"] == pytest.approx(0.030)
    assert s["networks"]["other"] == {"tasks": 1, "wmma_ms": pytest.approx(0.020),
                                      "simt_ms": pytest.approx(0.060), "gain": pytest.approx(3.0)}


def test_a_missing_store_is_one_line_and_exit_2(tmp_path, capsys):
    assert main(["--db", str(tmp_path / "none.duckdb"), "--hardware", "gpu-h200"]) == 2
    assert "no store at" in capsys.readouterr().err
