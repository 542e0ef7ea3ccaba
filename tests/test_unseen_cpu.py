"""bench/unseen_cpu.py: leaving one CPU out means its rows never reach the unseen model."""

import numpy as np
import pytest

from tests.models.synthetic import synthetic_dataset


def test_rows_split_by_profile_into_two_parts_that_cover_the_data():
    from bench.unseen_cpu import on_hardware

    data = synthetic_dataset(hardware=("cpu-a-1t", "cpu-b-1t", "cpu-c-1t"))
    mine = on_hardware(data, {"cpu-b-1t"})
    others = on_hardware(data, {"cpu-b-1t"}, keep=False)
    assert len(mine) + len(others) == len(data) and len(mine) > 0
    names = np.array(data.hardware_names)
    assert set(names[mine.candidate_hardware()]) == {"cpu-b-1t"}
    assert "cpu-b-1t" not in set(names[others.candidate_hardware()])


def test_the_unseen_model_never_trains_on_the_cpu_it_is_scored_on(monkeypatch):
    import bench.unseen_cpu as bench

    data = synthetic_dataset(n_groups=12, hardware=("cpu-a-1t", "cpu-b-1t"))
    trained = []

    def fitted(family, params, train, valid, seed):
        names = np.array(train.hardware_names)
        trained.append((family, set(names[train.candidate_hardware()]),
                        set(names[valid.candidate_hardware()])))
        return bench.create_model("xgb", seed=seed)

    monkeypatch.setattr(bench, "fitted", fitted)
    monkeypatch.setattr(bench, "score", lambda model, test, holdout: {"top1": 0.5, "top5": 0.9})
    arms = bench.one_cpu("cpu-b-1t", data, data, data, ("net0",), "xgb", 0, params={})
    assert set(arms) == {"unseen", "seen", "MS XGB, P only", "random"}
    assert trained == [("xgb", {"cpu-a-1t"}, {"cpu-a-1t"}),
                       ("xgb", {"cpu-a-1t", "cpu-b-1t"}, {"cpu-a-1t", "cpu-b-1t"}),
                       ("metaschedule_xgb", {"cpu-b-1t"}, {"cpu-b-1t"})]


def test_the_random_floor_is_seeded_so_a_rerun_draws_the_same():
    from bench.unseen_cpu import RandomRanking

    data = synthetic_dataset()
    a, b = RandomRanking(1).predict(data), RandomRanking(1).predict(data)
    assert a.shape == (len(data),) and np.array_equal(a, b)  # seeded: the same floor again


def test_cpus_scores_the_named_profiles_and_refuses_one_the_store_lacks():
    from bench.unseen_cpu import scored_cpus

    present = ["cpu-a-1t", "cpu-b-1t", "cpu-c-1t"]
    assert scored_cpus(None, present) == tuple(present)
    assert scored_cpus("cpu-c-1t", present) == ("cpu-c-1t",)
    with pytest.raises(SystemExit, match="--cpus cpu-z-1t: not a one-thread CPU profile"):
        scored_cpus("cpu-a-1t,cpu-z-1t", present)
