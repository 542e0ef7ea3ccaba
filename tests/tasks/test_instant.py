"""Instant tuning: the second pass (the trials left after the first, by latency share), and
the picks for tasks a search left unmeasured."""

from tasks.budget_shares import allocate_by_share, samples_by_importance
from tasks.instant import measure_top_for


def test_the_budget_follows_each_tasks_share_of_the_latency():
    assert allocate_by_share([6.0, 3.0, 1.0], 10, [100, 100, 100]) == [6, 3, 1]


def test_what_a_capped_task_cannot_take_goes_to_the_others():
    # the heaviest task's design space holds 2 more candidates; the rest goes by share
    assert allocate_by_share([8.0, 1.0, 1.0], 12, [2, 100, 100]) == [2, 5, 5]


def test_rounding_never_loses_a_trial_and_untimed_tasks_get_none():
    counts = allocate_by_share([1.0, 1.0, 1.0, 0.0], 7, [100, 100, 100, 100])
    assert sum(counts) == 7 and counts[3] == 0 and max(counts) - min(counts[:3]) <= 1


def test_caps_that_cannot_hold_the_budget_end_the_allocation():
    assert allocate_by_share([1.0, 1.0], 50, [3, 4]) == [3, 4]
    assert allocate_by_share([1.0], 0, [5]) == [0]


def test_the_first_pass_measures_between_two_and_eight_per_task():
    assert measure_top_for(16, 4) == 4
    assert measure_top_for(300, 23) == 8  # the rest goes to the second pass
    assert measure_top_for(10, 23) == 2


class _Log:
    def __init__(self, stop_after: int):
        self.trials, self.stop_after = 0, stop_after

    def should_stop(self) -> bool:
        return self.trials >= self.stop_after


class _Tuner:
    """tasks.instant._Tuner's double: ranks fresh candidates, 'measures' by counting."""

    def __init__(self, log, fresh: int):
        self.log, self.fresh, self.batches, self.lines = log, fresh, [], []
        self.reranked = []  # (task, pool size) each time its pool's top was re-ordered

    def rerank(self, state, ranked):
        self.reranked.append((state.task.task_name, len(ranked)))
        return ranked[::-1]  # a re-ranker that disagrees with the model entirely

    def report(self, line):
        self.lines.append(line)

    def rank(self, state, samples, seed):
        from tasks.instant import _Ranked

        return [_Ranked(f"{state.task.task_name}-new{i}", 0.5) for i in range(self.fresh)]

    def measure(self, state, picks):
        self.batches.append((state.task.task_name, len(picks)))
        self.log.trials += len(picks)
        return len(picks)


def _states(remainders: list[int], exhausted: list[bool]):
    from types import SimpleNamespace

    from tasks.instant import _Ranked, _TaskState

    return [_TaskState(i, SimpleNamespace(task_name=f"t{i}", weight=1), "{}", 1.0,
                       [_Ranked(f"t{i}-{j}", 1.0) for j in range(n)],
                       best_s=[0.003, 0.001][i], space_exhausted=x)
            for i, (n, x) in enumerate(zip(remainders, exhausted))]


def test_the_second_pass_measures_the_heaviest_task_first_in_batches_until_the_deadline():
    from tasks.instant import _second_pass

    states = _states([20, 20], [False, False])
    tuner = _Tuner(_Log(stop_after=20), fresh=10)
    _second_pass(tuner, states, extra=40, samples=10, seed=0, batch_size=8)
    # t0 carries 3/4 of the time: 30 of the 40; the deadline falls after its third batch
    assert tuner.batches == [("t0", 8), ("t0", 8), ("t0", 8)]
    assert "t0 30 (75%), t1 10 (25%)" in tuner.lines[0]
    assert len(states[0].remainder) == 6  # 20 + 10 fresh, 24 measured
    # the merged pool (remainder + fresh draw) was re-ordered once, before measuring: the
    # fresh draw's candidates (ranked last, at equal scores) were measured first
    assert tuner.reranked == [("t0", 30)]
    assert all("new" not in r.candidate for r in states[0].remainder)


def test_a_task_whose_space_is_exhausted_gets_no_more_than_it_has_left():
    from tasks.instant import _second_pass

    states = _states([3, 20], [True, False])
    tuner = _Tuner(_Log(stop_after=10**6), fresh=0)  # and the second draw comes up empty
    _second_pass(tuner, states, extra=40, samples=10, seed=0, batch_size=8)
    assert sum(n for t, n in tuner.batches if t == "t0") == 3
    assert sum(n for t, n in tuner.batches if t == "t1") == 20  # planned 30 of its 20 + 10


def test_a_second_pass_without_a_fresh_draw_spreads_the_remainders_alone():
    from tasks.instant import _second_pass

    states = _states([20, 4], [False, False])
    tuner = _Tuner(_Log(stop_after=10**6), fresh=10)  # a rank call would add 10 "new" each
    _second_pass(tuner, states, extra=40, samples=10, seed=0, batch_size=8, fresh=False)
    # by share t0 would take 30 of 40 and t1 10, but each has only its remainder to give
    assert "t0 20 (75%), t1 4 (25%)" in tuner.lines[0]
    assert tuner.batches == [("t0", 8), ("t0", 8), ("t0", 4), ("t1", 4)]
    assert states[0].remainder == [] == states[1].remainder
    assert tuner.reranked == []  # the remainders kept the first pass's (re-ranked) order


class _FillTuner:
    """_Tuner's double for fill_unmeasured: ranks `ranked` names; a pick named in `fails`
    fails, any other 'runs' in 1 ms; every batch goes to the real TuningLog."""

    def __init__(self, log, fails=()):
        self.log, self.fails, self.batches = log, set(fails), []

    def rank(self, state, samples, seed):
        from tasks.instant import _Ranked

        return [_Ranked(f"{state.task.task_name}-{j}", 1.0 - j / 10) for j in range(5)]

    def measure(self, state, picks):
        names = [p.candidate for p in picks]
        self.batches.append(names)
        secs = [None if n in self.fails else [0.001] for n in names]
        self.log.add(state.context, secs)
        if any(secs):
            state.best_s = 0.001
        return len(picks)


def _fill(monkeypatch, log, fails=(), model_path="some-model"):
    from types import SimpleNamespace

    import tasks.instant as instant

    tuner = _FillTuner(log, fails)
    tvm = SimpleNamespace(ir=SimpleNamespace(save_json=lambda mod: "{}"))
    monkeypatch.setattr(instant, "_tuner", lambda *args: (tvm, tuner))
    extracted = [SimpleNamespace(task_name=name, weight=1, dispatched=[None])
                 for name in log.task_names]
    lines = []
    filled = instant.fill_unmeasured(extracted, list(range(len(extracted))),
                                     [1.0] * len(extracted), None, None, model_path, log,
                                     None, 0, lines.append)
    return filled, tuner.batches, lines


def _deadline_log(measured: dict[str, float]):
    """A TuningLog past its deadline, with `measured` tasks' one valid measurement each."""
    import time

    from tasks.tuning import TuningLog

    log = TuningLog(["a", "b", "c"], [1.0, 2.0, 1.0], deadline=time.monotonic() - 1,
                    report=lambda line: None)
    for name, secs in measured.items():
        log.add(log.task_names.index(name), [[secs]])
    assert log.should_stop()
    return log


def test_a_deadline_that_left_tasks_unmeasured_gets_them_the_models_top_picks(monkeypatch):
    """Issue 15 item 2: the 255.5 ms resnet18 (one task kept TVM's default schedule)."""
    log = _deadline_log({"b": 0.004})
    assert log.estimated() is None
    filled, batches, lines = _fill(monkeypatch, log)
    assert filled == ["a", "c"]
    assert batches == [["a-0", "a-1"], ["c-0", "c-1"]]  # the model's top two, b untouched
    assert log.estimated() == 0.001 + 2 * 0.004 + 0.001  # every task has its schedule now
    assert log.final_reason() == "deadline"  # why the search ended stays recorded
    assert "2 of 3 tasks have no valid measurement (a, c)" in lines[0]


def test_picks_that_fail_are_followed_by_the_next_and_a_task_may_stay_default(monkeypatch):
    from tasks.instant import FILL_PICKS, FILL_ROUNDS

    log = _deadline_log({"a": 0.002, "b": 0.004})
    every_pick = [f"c-{j}" for j in range(5)]
    filled, batches, lines = _fill(monkeypatch, log, fails={"c-0", "c-1"})
    assert filled == ["c"] and batches == [["c-0", "c-1"], ["c-2", "c-3"]]
    log = _deadline_log({"a": 0.002, "b": 0.004})
    filled, batches, lines = _fill(monkeypatch, log, fails=set(every_pick))
    assert filled == [] and sum(map(len, batches)) == FILL_PICKS * FILL_ROUNDS
    assert "c: no valid schedule among 5 sampled; it keeps its default" in lines


def test_an_interrupt_is_prompt_and_a_search_that_measured_everything_is_left_alone(monkeypatch):
    log = _deadline_log({"b": 0.004})
    log.interrupt("SIGTERM")
    filled, batches, lines = _fill(monkeypatch, log)
    assert filled == [] and batches == []
    assert "2 tasks with no valid measurement keep their default schedules (a, c)" in lines[0]
    log = _deadline_log({"a": 0.001, "b": 0.004, "c": 0.001})
    assert _fill(monkeypatch, log) == ([], [], [])


def _fake_candidates(prefix, n):
    from types import SimpleNamespace

    import numpy as np

    return [SimpleNamespace(schedule_hash=f"{prefix}{i}", trace_json="[[], []]",
                            features=np.zeros((1, 164), np.float32)) for i in range(n)]


def _ranking_tuner(monkeypatch, predict):
    """A tuner whose sampling draws s0-s2 and whose model scores with `predict`."""
    from types import SimpleNamespace

    import tasks.instant as instant
    import tasks.sampling as sampling

    monkeypatch.setattr(sampling, "sample_candidates",
                        lambda mod, target, count, seed, known_hashes:
                        (_fake_candidates("s", 3), 0))
    profile = SimpleNamespace(name="p", target={}, feature_vector=lambda: [0.0])
    model = SimpleNamespace(predict=predict)
    return (instant._Tuner(None, profile, None, model, None, None, lambda line: None),
            instant._TaskState(0, None, "{}", 1.0))


def test_a_library_adds_transferred_candidates_to_a_tasks_first_ranking_only(monkeypatch):
    import numpy as np

    import tasks.instant as instant

    lent = []
    monkeypatch.setattr(instant, "transfer_candidates",
                        lambda *args, **kw: lent.append(kw["known_hashes"])
                        or _fake_candidates("x", 2))
    # the model prefers the transferred ones (scores: samples 0-2, then 10, 11)
    tuner, state = _ranking_tuner(monkeypatch, lambda data: np.array(
        [0.0, 1.0, 2.0, 10.0, 11.0])[:len(data.candidate_id)])
    tuner.library = ["a source"]
    ranked = tuner.rank(state, 3, seed=0)
    assert [r.candidate.schedule_hash for r in ranked] == ["x1", "x0", "s2", "s1", "s0"]
    assert [r.transferred for r in ranked] == [True, True, False, False, False]
    assert lent == [{"s0", "s1", "s2"}]  # told what was sampled, not to make it again
    tuner.rank(state, 3, seed=1)  # a second draw (the second pass) samples only
    assert len(lent) == 1 and state.sampled == {"s0", "s1", "s2", "x0", "x1"}


def test_evolution_adds_the_models_children_to_a_tasks_first_ranking_only(monkeypatch):
    import numpy as np

    import tasks.instant as instant
    from tasks.model_evolution import Scored

    bred = []

    def evolve(mod_json, target, parents, score, seed, generations, known_hashes):
        bred.append(([p.candidate.schedule_hash for p in parents], generations, known_hashes))
        return [Scored(c, 5.0) for c in _fake_candidates("e", 1)]

    monkeypatch.setattr(instant, "evolve", evolve)
    tuner, state = _ranking_tuner(
        monkeypatch, lambda data: np.arange(len(data.candidate_id), dtype=float))
    tuner.evolve_generations = 2
    ranked = tuner.rank(state, 3, seed=0)
    # the child (scored 5) ranks first; the parents are the samples, best first
    assert [r.candidate.schedule_hash for r in ranked] == ["e0", "s2", "s1", "s0"]
    assert [r.evolved for r in ranked] == [True, False, False, False]
    assert bred == [(["s2", "s1", "s0"], 2, {"s0", "s1", "s2"})]
    tuner.rank(state, 3, seed=1)  # a second draw (the second pass) samples only
    assert len(bred) == 1 and state.sampled == {"s0", "s1", "s2", "e0"}


def test_samples_by_importance_keeps_the_mean_a_floor_and_a_cap():
    got = samples_by_importance([100.0, 10.0, 0.0, 0.0], mean=64)
    assert sum(got) == 4 * 64 and min(got) == 16 and got[2] == got[3] == 16
    assert got[0] > got[1] > 16 and max(got) <= 256
    capped = samples_by_importance([1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], mean=64)
    assert capped[0] == 256 and capped[1:] == [16] * 7  # what the cap leaves is not spent
    assert samples_by_importance([5.0, 1.0], mean=8) == [8, 8]  # the floor stops at the mean
