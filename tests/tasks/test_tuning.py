"""Task selection by FLOPs share and the tuning log (curve, estimate, deadline)."""

import math
import time

import pytest

from core.errors import TenforgeError
from tasks.schedulers import expected_gain, gradient_pick
from tasks.tuning import SEARCH_SCHEDULERS, TaskShare, TuningLog, select_tasks

TASKS = [TaskShare("conv_a", 600.0, 1), TaskShare("reshape", 0.0, 4),
         TaskShare("conv_b", 100.0, 3), TaskShare("dense", 50.0, 1), TaskShare("add", 10.0, 5)]
# importance: conv_a 600, conv_b 300, dense 50, add 50, reshape 0 -> total 1000


@pytest.mark.parametrize("share, expected", [
    (0.5, [0]),             # conv_a alone carries 60%
    (0.9, [0, 2]),          # + conv_b (3 occurrences) = 90%
    (0.95, [0, 2, 3]),      # + dense (ties with add: the earlier task first)
    (0.999, [0, 2, 3, 4]),  # everything with FLOPs
    (1.0, [0, 1, 2, 3, 4]),  # every task: the zero-FLOP reshape takes time too
])
def test_select_tasks_by_flops_times_occurrences(share, expected):
    assert select_tasks(TASKS, share) == expected


def test_select_tasks_keeps_one_task_and_checks_the_share():
    assert select_tasks([TaskShare("copy", 0.0, 1)], 0.9) == [0]
    with pytest.raises(TenforgeError, match="flops share"):
        select_tasks(TASKS, 0.0)


def test_a_refit_interval_below_one_is_refused_before_anything_is_imported(tmp_path):
    from tasks.tuning import tune_network

    for bad in (0, -13, 2.5):
        with pytest.raises(TenforgeError, match="refit every must be a positive integer"):
            tune_network("resnet18", None, tmp_path, trials=10, cost_model="some-model",
                         refit_every=bad)
    assert not any(tmp_path.iterdir())  # refused before a work folder was written


def test_the_population_follows_the_rounds_batch_within_bounds():
    from tasks.tuning.contexts import round_batch, search_population

    assert round_batch(192, 6) == 16 and search_population(16) == 128  # bench/throughput.py
    assert round_batch(2000, 6) == 64 and search_population(64) == 256  # large budgets: as before
    assert round_batch(8, 2) == 4 and search_population(4) == 64  # never below 64
    assert search_population(23, ratio=4) == 92 and search_population(64, ratio=4) == 256
    assert round_batch(1, 50) == 4  # a round measures at least 4
    assert round_batch(1000, 38, 2.0) == 26 and round_batch(1000, 38, 0.5) == 6  # scaled
    assert round_batch(1, 50, 0.1) == 1


def test_tuning_log_estimates_once_every_task_has_a_valid_run():
    lines = []
    log = TuningLog(["a", "b"], [2.0, 1.0], report=lines.append)
    log.add(0, [[3e-3, 5e-3], None])  # mean 4 ms, and a failed candidate
    assert log.estimated() is None and log.curve[-1].estimated_s is None
    log.add(1, [[1e-3], [2e-3]])
    log.add(0, [[1e-3]])
    assert log.best == [1e-3, 1e-3]
    assert math.isclose(log.estimated(), 2 * 1e-3 + 1e-3)
    assert [p.trials for p in log.curve] == [2, 4, 5] and log.errors == 1
    assert log.trials_per_task == [3, 2]
    assert "estimated network latency 3.000 ms" in lines[-1]


def test_tuning_log_deadline():
    assert not TuningLog(["a"], [1.0]).past_deadline()
    assert TuningLog(["a"], [1.0], deadline=time.monotonic() - 1).past_deadline()


def test_tuning_log_with_one_context_per_design_space():
    # task "a" has two design-space contexts (0, 1); task "b" one (2)
    log = TuningLog(["a", "b"], [1.0, 1.0], context_task=[0, 0, 1], report=lambda _: None)
    log.add(0, [[4e-3]])
    log.add(1, [[2e-3], [3e-3]])
    log.add(2, [[1e-3]])
    assert log.context_best == [4e-3, 2e-3, 1e-3]
    assert log.best == [2e-3, 1e-3] and log.trials_per_task == [3, 1]
    assert math.isclose(log.estimated(), 3e-3)


def test_expected_gain_prefers_improving_heavy_contexts_and_keeps_exploring():
    log = TuningLog(["a", "b"], [1.0, 3.0], context_task=[0, 0, 1], report=lambda _: None)
    log.best = [1e-3, 1e-3]
    log.context_best = [1e-3, 4e-3, 1e-3]
    # never measured validly: infinitely worth a first turn, then only a fading exploration share
    assert expected_gain(log, 1, [math.inf]) == math.inf
    assert 0 < expected_gain(log, 1, [math.inf, math.inf]) < 1e-4
    # the same improvement history: the task that runs 3x as often gains 3x as much
    history = [2e-3, 1.5e-3, 1e-3]
    assert math.isclose(expected_gain(log, 2, history), 3 * expected_gain(log, 0, history))
    # a design space 4x slower than its task's best: only the exploration floor, fading with turns
    lagging = expected_gain(log, 1, [5e-3, 4e-3])
    assert lagging < expected_gain(log, 0, history)
    assert expected_gain(log, 1, [5e-3, 4e-3, 4e-3, 4e-3]) < lagging
    # a stalled context keeps a positive share (explore / rounds)
    assert expected_gain(log, 0, [1e-3] * 5) > 0


def test_the_log_says_when_and_why_to_stop():
    said = []
    log = TuningLog(["a"], [1.0], deadline=time.monotonic() - 1, budget=8, report=said.append)
    assert log.should_stop() and log.final_reason() == "deadline"
    assert len(said) == 1 and log.should_stop() and len(said) == 1  # said once
    log = TuningLog(["a"], [1.0], budget=2, report=said.append)
    assert not log.should_stop()
    log.interrupt("SIGTERM")
    assert log.should_stop() and log.final_reason() == "interrupt"
    log = TuningLog(["a"], [1.0], budget=2, report=lambda _: None)
    log.add(0, [[1e-3], None])
    assert log.final_reason() == "trials" and log.context_trials == [2]
    assert TuningLog(["a"], [1.0], budget=9, report=lambda _: None).final_reason() == "exhausted"


def test_gradient_pick_is_metaschedules_rule():
    import random

    log = TuningLog(["a", "b", "c"], [1.0, 1.0, 3.0], report=lambda _: None)
    rng = random.Random(0)
    # b has nothing valid (-1e9); a improves, c is flat but weighs 3x: g = 0.8 * best / n * w
    history = {0: [4e-3, 3e-3, 2e-3, 1e-3], 1: [math.inf], 2: [1e-3] * 4}
    g_a = 0.2 * (4e-3 - 1e-3) / 3 + 0.8 * 1e-3 / 4
    g_c = (0.2 * 0 + 0.8 * 1e-3 / 4) * 3
    assert gradient_pick(log, [0, 1, 2], history, rng) == (0 if g_a > g_c else 2)
    assert gradient_pick(log, [0, 1], history, rng) == 0
    # all equal (nothing measured anywhere): a random alive task, seeded
    picks = {gradient_pick(log, [0, 1, 2], {}, random.Random(s)) for s in range(20)}
    assert picks == {0, 1, 2}


def test_a_warm_start_counted_as_part_of_a_turn_lets_a_light_task_have_one():
    """Both warm-started; the heavy task (10x) had one search turn since. Counted as a whole
    turn, the warm start leaves the light one waiting: 1e-3 / 1 against 10 x 1e-3 / 2. Counted
    as a tenth of a turn (4 trials of a batch of 40), the light task's first turn comes now:
    1e-3 / 0.1 against 10 x 1e-3 / 1.1."""
    import random

    log = TuningLog(["light", "heavy"], [1.0, 10.0], report=lambda _: None)
    history = {0: [1e-3], 1: [1e-3, 1e-3]}
    assert gradient_pick(log, [0, 1], history, random.Random(0)) == 1
    assert gradient_pick(log, [0, 1], history, random.Random(0),
                         head_start={0: 0.1, 1: 0.1}) == 0
    from tasks.schedulers import create_scheduler

    with pytest.raises(ValueError, match="warm_turn 0: give the part of a turn"):
        create_scheduler("gradient", log, focus=True, warm_turn=0)


@pytest.mark.parametrize("n_tasks", [25, 51])  # resnet18's and mobilenet_v2's task counts
@pytest.mark.parametrize("scheduler", SEARCH_SCHEDULERS)
def test_every_scheduler_stops_at_the_deadline_within_one_batch(scheduler, n_tasks, tmp_path):
    """Real MetaSchedule search and schedulers, faked measuring (tests/tasks/ms_doubles.py).
    The deadline falls inside the first pass over the tasks: MetaSchedule's own gradient
    scheduler could not stop there, and stopping it by terminating tasks crashed it."""
    from tvm.s_tir import meta_schedule as ms

    from tasks.schedulers import create_scheduler
    from tasks.tuning.log import recorder as _recorder
    from tests.tasks.ms_doubles import fake_builder, fake_runner, matmul_contexts

    contexts = matmul_contexts(n_tasks)
    log = TuningLog([f"matmul_{i}" for i in range(n_tasks)], [1.0] * n_tasks, budget=10_000,
                    report=lambda _: None)
    batches: list[float] = []
    log.started = time.monotonic()
    log.deadline = log.started + 1.5
    ms.tune_tasks(tasks=contexts, task_weights=[1.0] * n_tasks, work_dir=str(tmp_path),
                  max_trials_global=10_000, num_trials_per_iter=4,
                  builder=fake_builder(), runner=fake_runner(0.02, batches),
                  database=ms.database.MemoryDatabase(), cost_model="random",
                  measure_callbacks=[_recorder(log)],
                  task_scheduler=create_scheduler(scheduler, log, seed=0))
    assert log.final_reason() == "deadline"
    assert sum(start > log.deadline for start in batches) <= 1  # at most the batch in flight
    assert log.trials == 4 * len(batches) and 0 < len(batches) < 10_000 // 4


@pytest.mark.parametrize("scheduler", SEARCH_SCHEDULERS)
def test_every_scheduler_survives_tasks_that_run_out_of_candidates(scheduler, tmp_path):
    """MetaSchedule terminates a task without sending anything when it has nothing left to
    measure (its trial cap reached, or its design space exhausted: an elementwise task whose
    few schedules the seeded database already holds). Joining such a task crashed retunes of
    efficientnet_b0 and convnext (`Check failed: (task->runner_futures.has_value())`)."""
    from tvm.s_tir import meta_schedule as ms

    from tasks.schedulers import create_scheduler
    from tasks.tuning.log import recorder as _recorder
    from tests.tasks.ms_doubles import fake_builder, fake_runner, matmul_contexts

    n_tasks = 5
    log = TuningLog([f"matmul_{i}" for i in range(n_tasks)], [1.0] * n_tasks, budget=10_000,
                    report=lambda _: None)
    log.started = time.monotonic()
    batches: list[float] = []
    # a cap of one batch per task: every task runs out right after its first batch
    ms.tune_tasks(tasks=matmul_contexts(n_tasks), task_weights=[1.0] * n_tasks,
                  work_dir=str(tmp_path), max_trials_global=10_000, max_trials_per_task=4,
                  num_trials_per_iter=4, builder=fake_builder(), runner=fake_runner(0.0, batches),
                  database=ms.database.MemoryDatabase(), cost_model="random",
                  measure_callbacks=[_recorder(log)],
                  task_scheduler=create_scheduler(scheduler, log, seed=0))
    assert len(batches) == n_tasks and log.trials == 4 * n_tasks


def _searched_after_a_warm_start(tmp_path, scheduler: str, focus: bool,
                                 warm_turn: float = 1.0) -> list[int]:
    """Tasks 0-3 were warm-started (task 2 weighs 10x), task 4's warm picks all failed; three
    batches of 4 follow. The trials each task got from them."""
    from tvm.s_tir import meta_schedule as ms

    from tasks.schedulers import create_scheduler
    from tasks.tuning.log import recorder as _recorder
    from tests.tasks.ms_doubles import fake_builder, fake_runner, matmul_contexts

    weights = [1.0, 1.0, 10.0, 1.0, 1.0]
    log = TuningLog([f"matmul_{i}" for i in range(5)], weights, budget=10_000,
                    report=lambda _: None)
    for task in range(4):  # the warm start's one measured pick per task
        log.add(task, [[1e-3]])
    log.add(4, [None])
    warm = list(log.context_trials)
    ms.tune_tasks(tasks=matmul_contexts(5), task_weights=weights, work_dir=str(tmp_path),
                  max_trials_global=12, num_trials_per_iter=4, builder=fake_builder(),
                  runner=fake_runner(0.0, []), database=ms.database.MemoryDatabase(),
                  cost_model="random", measure_callbacks=[_recorder(log)],
                  task_scheduler=create_scheduler(scheduler, log, seed=0, focus=focus,
                                                  warm_turn=warm_turn))
    return [after - before for after, before in zip(log.context_trials, warm)]


@pytest.mark.parametrize("scheduler", ["gradient", "gain"])
@pytest.mark.parametrize("focus", [False, True])
def test_after_a_warm_start_focus_skips_the_blind_pass_for_the_measured_tasks(focus, scheduler,
                                                                              tmp_path):
    """MetaSchedule's blind pass (gain: each unseen task's first turn) gives the three batches
    to tasks 0, 1, 2 in order; focused, the unmeasured task 4 gets its first batch and the rule
    sends the rest to task 2."""
    searched = _searched_after_a_warm_start(tmp_path, scheduler, focus)
    assert searched == ([0, 0, 8, 0, 4] if focus else [4, 4, 4, 0, 0])


def test_a_warm_start_counted_by_its_trials_reaches_the_light_tasks(tmp_path):
    """The focus case above with the warm start counted as a tenth of a turn: after task 4's
    blind batch and one for the heavy task 2 (10 x 1e-3 / 1.1), a light warm-started task
    (1e-3 / 0.1) has the next; counted whole, task 2 had it (tasks measure 1-2 ms here)."""
    assert _searched_after_a_warm_start(tmp_path, "gradient", True, 0.1) == [4, 0, 4, 0, 4]


def test_a_search_that_crashes_ends_the_search_not_the_run():
    from tasks.tuning.log import survive_search_errors

    said: list[str] = []
    log = TuningLog(["a"], [1.0], budget=9, report=said.append)
    log.add(0, [[1e-3], [2e-3]])
    with survive_search_errors(log):  # what MetaSchedule's C++ checks raise
        raise RuntimeError("Check failed: (task->runner_futures.has_value()) is false:\n")
    assert log.final_reason() == "error" and log.should_stop()
    assert said[-1].startswith("WARNING: the search failed after 2 trials (RuntimeError: "
                               "Check failed:") and "compiling with what it measured" in said[-1]
    with survive_search_errors(log):
        raise RuntimeError()
    assert said[-1].startswith("WARNING: the search failed after 2 trials (RuntimeError: (no ")
    with pytest.raises(TenforgeError), survive_search_errors(log):  # bad input still refuses
        raise TenforgeError("a model whose features do not match")
