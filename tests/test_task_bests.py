"""bench/task_bests.py: a task's best is its fastest valid measurement, keyed by its shapes, and
the median over databases of the tasks they all have; --first keeps the measuring order."""

import pytest

from bench.task_bests import median_bests, median_summary, task_bests, task_runs
from core.tvm_env import load_tvm


def _database(folder, runs: dict[int, list[float]]) -> str:
    """A MetaSchedule JSON database in `folder`: per matmul size n (n x 8 by 8 x 8), one
    record per run time given (1e10: a failed candidate)."""
    tvm = load_tvm("llvm")
    from tvm import s_tir
    from tvm.s_tir import meta_schedule as ms

    folder.mkdir()
    database = ms.database.JSONDatabase(work_dir=str(folder))
    for n, times in runs.items():
        mod = _matmul(tvm, n)
        workload = database.commit_workload(mod)
        for seconds in times:
            database.commit_tuning_record(ms.database.TuningRecord(
                s_tir.Schedule(mod).trace, workload, run_secs=[seconds],
                target=tvm.target.Target("llvm"),
                args_info=ms.arg_info.ArgInfo.from_prim_func(mod["main"])))
    return str(folder)


def _matmul(tvm, n: int):
    from tvm import te

    a, b = te.placeholder((n, 8), name="a"), te.placeholder((8, 8), name="b")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((n, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    return tvm.IRModule({"main": te.create_prim_func([a, b, c])})


def test_a_tasks_best_is_its_fastest_valid_run_and_the_median_is_over_common_tasks(tmp_path):
    first = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6], 16: [9e-6]})
    second = _database(tmp_path / "b", {4: [4e-6], 32: [1e-6]})
    third = _database(tmp_path / "c", {4: [1e10, 6e-6]})
    key = ((4, 8), (8, 8), (4, 8))
    assert task_bests(first) == pytest.approx({key: 2e-6, ((16, 8), (8, 8), (16, 8)): 9e-6})
    # only the 4 x 8 task is in all three; its bests are 2, 4 and 6 us
    assert median_bests([first, second, third]) == pytest.approx({key: 4e-6})


def test_the_summary_counts_each_tasks_valid_measurements_median_over_databases(tmp_path):
    first = _database(tmp_path / "a", {4: [3e-6, 1e10, 2e-6]})
    second = _database(tmp_path / "b", {4: [4e-6, 5e-6, 6e-6, 7e-6]})
    third = _database(tmp_path / "c", {4: [1e10, 6e-6]})
    key = ((4, 8), (8, 8), (4, 8))
    # valid measurements 2, 4 and 1 (failed ones do not count): median 2; bests 2, 4, 6 us
    assert median_summary([first, second, third]) == pytest.approx({key: (4e-6, 2)})


def test_first_n_keeps_each_tasks_earliest_measurements_not_its_fastest(tmp_path):
    # MetaSchedule's get_all_tuning_records sorts by run time; the search's order is the file's
    folder = _database(tmp_path / "a", {4: [5e-6, 1e10, 3e-6, 2e-6], 16: [9e-6, 7e-6]})
    small, large = ((4, 8), (8, 8), (4, 8)), ((16, 8), (8, 8), (16, 8))
    assert task_runs(folder) == pytest.approx({small: [5e-6, 3e-6, 2e-6], large: [9e-6, 7e-6]})
    assert task_runs(folder, first=1) == pytest.approx({small: [5e-6], large: [9e-6]})
    # the failed record does not count: the first two valid ones are 5 and 3 us
    assert median_summary([folder], first=2) == pytest.approx({small: (3e-6, 2), large: (7e-6, 2)})


def test_sides_with_no_task_in_common_exit_with_one_line(tmp_path, monkeypatch, capsys):
    from bench import task_bests

    before = _database(tmp_path / "a", {4: [3e-6]})
    after = _database(tmp_path / "b", {16: [9e-6]})  # another task: nothing to match
    monkeypatch.setattr("sys.argv", ["task_bests.py", before, after])
    with pytest.raises(SystemExit, match="no task is in every database of both sides"):
        task_bests.main()
