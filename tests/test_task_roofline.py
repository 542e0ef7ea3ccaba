"""bench/task_roofline.py: a task's rate is its FLOPs over its fastest valid run, median over a
group's databases, and the peak comes from a real one-thread matmul."""

import shutil

import pytest

from bench.task_roofline import fma_peak_gflops, group_gflops, sgemm_gflops, task_gflops
from tests.test_task_bests import _database

# an n x 8 by 8 x 8 matmul: n * 8 * 8 multiply-adds, 2 FLOPs each
_FLOPS = {4: 2 * 4 * 8 * 8, 16: 2 * 16 * 8 * 8}


def test_a_tasks_rate_is_its_flops_over_its_fastest_valid_run(tmp_path):
    folder = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6], 16: [8e-6]})
    rates = task_gflops(folder)
    assert rates[((4, 8), (8, 8), (4, 8))] == pytest.approx((_FLOPS[4], _FLOPS[4] / 2e-6 / 1e9))
    assert rates[((16, 8), (8, 8), (16, 8))] == pytest.approx((_FLOPS[16], _FLOPS[16] / 8e-6 / 1e9))


def test_a_groups_rate_is_the_median_over_its_databases_of_the_tasks_they_all_have(tmp_path):
    folders = [_database(tmp_path / "a", {4: [2e-6], 16: [1e-6]}),
               _database(tmp_path / "b", {4: [4e-6]}),
               _database(tmp_path / "c", {4: [1e10, 8e-6]})]
    # only the 4 x 8 task is in all three; its bests are 2, 4 and 8 us: the median is 4
    assert group_gflops(folders) == pytest.approx(
        {((4, 8), (8, 8), (4, 8)): (_FLOPS[4], _FLOPS[4] / 4e-6 / 1e9)})


def test_the_peak_is_a_measured_positive_rate():
    small = sgemm_gflops(size=64, repeats=3)
    assert 0.05 < small < 10_000  # a real CPU's one-thread fp32 rate, in GFLOPS


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                    reason="the FMA loop is compiled with cc or gcc: neither is installed")
def test_the_fma_loop_is_compiled_here_and_runs_at_a_real_rate():
    rate = fma_peak_gflops(steps=200_000, repeats=2)
    assert rate is not None and 0.05 < rate < 10_000
