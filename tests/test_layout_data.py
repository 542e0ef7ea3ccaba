"""bench/layout_data.py: the `without` model never sees a task that only the layout's graphs
have, and a task the exported graph shares stays in its training."""

from tests.models.synthetic import synthetic_dataset


def with_layout_tasks():
    """w0-w2: only net0+nchw16c; w3: net0+nchw16c and net0 (a shared dense layer); the rest:
    exported graphs."""
    data = synthetic_dataset(n_groups=12, hardware=("cpu-a-1t", "cpu-b-1t"))
    nets = {f"w{g}": {f"net{g % 3}": 1} for g in range(12)}
    nets.update({f"w{g}": {"net0+nchw16c": 1} for g in range(3)})
    nets["w3"] = {"net0+nchw16c": 1, "net0": 1}
    nets["w4"] = {"net1+nchw8c@160": 1}
    data.workload_networks.clear()
    data.workload_networks.update(nets)
    return data


def test_only_the_tasks_of_the_layout_alone_are_taken_away():
    from bench.layout_data import layout_only

    data = with_layout_tasks()
    only = layout_only(data, "nchw16c")
    assert set(data.group_workload[data.group[only]]) == {"w0", "w1", "w2"}
    assert set(data.group_workload[data.group[layout_only(data, "nchw8c")]]) == {"w4"}


def test_the_scored_graphs_are_the_held_out_networks_in_the_layout():
    from bench.layout_data import layout_networks

    data = with_layout_tasks()
    assert layout_networks(data, "nchw16c", ("net0",)) == ("net0+nchw16c",)
    assert layout_networks(data, "nchw16c", ("net1",)) == ()
    assert layout_networks(data, "nchw8c", ("net1",)) == ("net1+nchw8c",)


def test_the_without_model_trains_on_every_row_but_the_layouts_own(monkeypatch):
    import bench.layout_data as bench
    from bench.unseen_cpu import RandomRanking

    data = with_layout_tasks()
    trained = {}

    def fitted(family, params, train, valid, seed):
        trained[len(trained)] = (family, set(train.group_workload[train.group]),
                                 set(valid.group_workload[valid.group]))
        return RandomRanking(seed)

    monkeypatch.setattr(bench, "fitted", fitted)
    out = bench.arms_for_seed(data, data, data, "nchw16c", ("net0+nchw16c",), "lgbm", 0)
    everything = {f"w{g}" for g in range(12)}
    assert trained[0] == ("lgbm", everything - {"w0", "w1", "w2"},
                          everything - {"w0", "w1", "w2"})
    assert trained[1] == ("lgbm", everything, everything)
    assert trained[2] == ("lgbm", everything, everything)  # no trace summary
    assert trained[3][0] == "metaschedule_xgb"
    # cpu-a measured w0 and w2, cpu-b w1: both measured the layout's own tasks
    assert set(out) == {"cpu-a-1t", "cpu-b-1t"}
    assert set(out["cpu-a-1t"]) == {"without", "with", "with, no trace", "MS XGB", "random"}
    assert all(0 <= v["top1"] <= 1 for arms in out.values() for v in arms.values())


def test_a_cpu_with_only_the_shared_tasks_is_not_scored(monkeypatch):
    """cpu-b measured w3 (the dense layer net0 shares) but none of the layout's own tasks."""
    import numpy as np

    import bench.layout_data as bench
    from bench.unseen_cpu import RandomRanking

    data = with_layout_tasks()
    data = data.subset(np.flatnonzero(data.group_workload[data.group] != "w1"))
    monkeypatch.setattr(bench, "fitted", lambda *a: RandomRanking(0))
    out = bench.arms_for_seed(data, data, data, "nchw16c", ("net0+nchw16c",), "lgbm", 0)
    assert set(out) == {"cpu-a-1t"}
