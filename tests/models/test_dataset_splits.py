"""Datasets built from a real store (the shipped seed) and the four split strategies."""

from dataclasses import replace

import numpy as np
import pytest

from core.errors import TenforgeError
from models.dataset import DataSpec, load_dataset
from models.splits import SplitSpec, make_split
from storage.store import Store
from tests.models.synthetic import synthetic_dataset


@pytest.fixture(scope="module")
def seed_data(seed_store):
    with Store(seed_store, read_only=True) as store:
        hardware = tuple(h for (h,) in store.query("SELECT name FROM hardware ORDER BY 1"))
    return load_dataset(seed_store, DataSpec(hardware=hardware))


def test_dataset_from_the_store(seed_data, seed_store):
    data = seed_data
    with Store(seed_store, read_only=True) as store:
        measured = store.scalar("SELECT count(*) FROM measurements")
    assert 0 < len(data) <= measured
    assert ((data.label >= 0) & (data.label <= 1)).all()
    for g in np.unique(data.group):  # the best candidate of every task has label 1
        assert data.label[data.group == g].max() == pytest.approx(1.0)
    assert (data.label[~np.isfinite(data.latency)] == 0).all()
    assert np.bincount(data.group)[np.unique(data.group)].min() >= 2  # nothing to rank in 1
    assert data.store_offsets[-1] == data.store_features.shape[0]
    assert data.pack_sum().shape == (len(data), 164)
    assert load_dataset(seed_store, data.spec).fingerprint() == data.fingerprint()


def _two_shards_of_one_task_set() -> list:
    """The two smallest seed shards of one profile that measured the same network (20 or more
    candidates each), so their candidates share tasks."""
    import json
    from collections import defaultdict

    from storage.seed import find_shards

    by_run = defaultdict(list)
    for manifest in find_shards():
        said = json.loads(manifest.read_text())
        if said["measured"] < 20:
            continue
        by_run[(manifest.parent.name, tuple(said["network"]))].append(
            (sum(f["bytes"] for f in said["files"].values()), manifest))
    pairs = sorted(sorted(found)[:2] for found in by_run.values() if len(found) >= 2)
    return [manifest for _, manifest in min(pairs, key=lambda p: p[0][0] + p[1][0])]


def test_two_stores_of_the_same_shards_give_the_same_rows_whatever_order_they_loaded(tmp_path):
    """Candidate ids are store-local: the order shards (or DuckDB's parallel insert) met the
    candidates numbers them. A dataset's rows and fingerprint must not follow them, or the same
    command trains different models and a lineage names ids, not data."""
    import shutil

    from storage.seed import load_shards

    shards = _two_shards_of_one_task_set()
    loaded = []
    for order in (shards, shards[::-1]):
        db = str(tmp_path / f"store-{len(loaded)}.duckdb")
        for manifest in order:  # one shard at a time, in this order
            folder = tmp_path / f"one-{len(loaded)}-{manifest.stem}" / manifest.parent.name
            folder.mkdir(parents=True)
            for part in manifest.parent.glob(manifest.stem + ".*"):
                shutil.copy(part, folder)
            load_shards(db, folder.parent, progress=lambda _: None)
        loaded.append(load_dataset(db, DataSpec(hardware=(shards[0].parent.name,))))
    first, second = loaded
    assert not np.array_equal(first.candidate_id, second.candidate_id)  # ids did differ
    assert np.array_equal(first.latency, second.latency)
    assert np.array_equal(first.group_workload[first.group], second.group_workload[second.group])
    assert first.fingerprint() == second.fingerprint()


def test_dataset_filters_by_network(seed_data, seed_store):
    mlp = load_dataset(seed_store, DataSpec(hardware=seed_data.hardware_names, networks=("mlp",)))
    assert 0 < len(mlp) < len(seed_data)
    workloads = set(mlp.group_workload[mlp.group])
    assert all("mlp" in seed_data.workload_networks[w] for w in workloads)


def test_dataset_knows_every_listed_task_of_a_network_measured_or_not(seed_data, seed_store):
    """workload_flops: every task the store lists for a network, with its FLOPs, also those no
    loaded row measured (single-candidate tasks drop out): a network's whole work."""
    with Store(seed_store, read_only=True) as store:
        listed = dict(store.query("SELECT DISTINCT t.workload_hash, t.flops FROM tasks t "
                                  "JOIN network_tasks USING (task_id)"))
    assert seed_data.workload_flops == listed
    assert set(listed) == set(seed_data.workload_networks)
    loaded = np.unique(seed_data.group)
    assert set(seed_data.group_workload[loaded]) < set(listed)  # some tasks had no rows
    for w, f in zip(seed_data.group_workload[loaded], seed_data.group_flops[loaded]):
        assert listed[w] == f


@pytest.mark.parametrize("spec, message", [
    (DataSpec(hardware=("tpu-v9",)), "hardware tpu-v9 has no data"),
    (DataSpec(hardware=("cpu-znver3-sse42-1t",), networks=("alexnet",)),
     "network alexnet has no data"),
    (DataSpec(hardware=("cpu-znver3-sse42-1t",), extractor="nope"),
     "no measured candidates with nope features"),
])
def test_a_spec_that_matches_no_data_is_refused(seed_store, spec, message):
    with pytest.raises(TenforgeError, match=message):
        load_dataset(seed_store, spec)


def test_candidate_sources(seed_data, seed_store):
    hardware = seed_data.hardware_names
    sampled = load_dataset(seed_store, DataSpec(hardware=hardware, sources=("sampled",)))
    # the seed holds collect's random samples and, on some profiles, retunes' search data
    searched = load_dataset(seed_store, DataSpec(hardware=hardware, sources=("tuning",)))
    assert len(sampled) and len(searched) and len(searched) < len(sampled)
    assert not np.isin(sampled.candidate_id, searched.candidate_id).any()
    assert np.isin(np.concatenate([sampled.candidate_id, searched.candidate_id]),
                   seed_data.candidate_id).all()
    assert "sources" not in seed_data.spec.to_json()  # older lineages' fingerprints still hold
    with pytest.raises(TenforgeError, match="from sources imported in"):
        load_dataset(seed_store, DataSpec(hardware=hardware, sources=("imported",)))
    with pytest.raises(TenforgeError, match=r"unknown candidate source\(s\) \['random'\].*"
                                            "sampled, tuning, imported"):
        DataSpec(hardware=hardware, sources=("random",))


def test_labels_from_the_median_of_the_repeats(seed_data, seed_store):
    median = load_dataset(seed_store, replace(seed_data.spec, latency="median"))
    assert (median.candidate_id == seed_data.candidate_id).all()  # the same rows, other labels
    with Store(seed_store, read_only=True) as store:
        repeats = dict(store.query("SELECT candidate_id, run_secs FROM measurements "
                                   "WHERE run_secs IS NOT NULL"))
    for i in np.flatnonzero(np.isfinite(seed_data.latency))[::97]:
        runs = repeats[int(seed_data.candidate_id[i])]
        assert seed_data.latency[i] == pytest.approx(np.mean(runs), rel=1e-6)
        assert median.latency[i] == pytest.approx(np.median(runs), rel=1e-6)
    assert (np.isfinite(median.latency) == np.isfinite(seed_data.latency)).all()
    for g in np.unique(median.group):  # each task's best by its median has label 1
        assert median.label[median.group == g].max() == pytest.approx(1.0)
    assert median.fingerprint() != seed_data.fingerprint()
    assert "latency" not in seed_data.spec.to_json()  # older lineages' fingerprints still hold
    assert median.spec.to_json()["latency"] == "median"
    assert DataSpec.from_json(median.spec.to_json()) == median.spec
    with pytest.raises(TenforgeError, match="unknown latency statistic 'min'.*mean or median"):
        DataSpec(hardware=seed_data.hardware_names, latency="min")


def _workloads(data, index):
    return set(data.group_workload[data.group[index]])


@pytest.mark.parametrize("kind", ["by_task", "by_network"])
def test_held_out_splits_share_no_task(seed_data, kind):
    holdout = ("tiny_cnn",) if kind == "by_network" else ()
    split = make_split(seed_data, SplitSpec(kind, seed=1, holdout=holdout))
    train, valid, test = (_workloads(seed_data, s) for s in (split.train, split.valid,
                                                             split.test))
    assert train and test
    assert not (train & test) and not (valid & test) and not (train & valid)
    if kind == "by_network":
        assert all("tiny_cnn" in seed_data.workload_networks[w] for w in test)
        # validation is whole networks too: none of a validation network's tasks trains
        nets = seed_data.workload_networks
        valid_nets = {n for w in valid for n in nets[w]} - {n for w in train for n in nets[w]}
        assert valid_nets and all(not set(nets[w]) & valid_nets for w in train)
        assert all(set(nets[w]) & valid_nets for w in valid)


def test_a_held_out_network_takes_the_tasks_it_shares_with_it():
    from models.splits import rows_of_networks

    data = synthetic_dataset(n_groups=4, per_group=5)
    # labels as the store makes them: a size where the store holds several (queries.py)
    data.workload_networks.update({"w0": {"resnet18@224": 1, "resnet50@224": 2},
                                   "w1": {"resnet18+nchw16c": 1}, "w2": {"vgg11": 1},
                                   "w3": {"resnet50@160": 1}})
    held = data.group[rows_of_networks(data, ["resnet18"])]
    assert set(held) == {0, 1}  # w0 although resnet50 shares it; every graph of resnet18
    assert set(data.group[rows_of_networks(data, ["resnet50@160"])]) == {3}  # one size alone
    assert not rows_of_networks(data, []).any()


def test_splits_are_seeded():
    data = synthetic_dataset(n_groups=20)
    a = make_split(data, SplitSpec("by_task", seed=1))
    b = make_split(data, SplitSpec("by_task", seed=1))
    c = make_split(data, SplitSpec("by_task", seed=2))
    assert all(np.array_equal(x, y) for x, y in [(a.train, b.train), (a.test, b.test)])
    assert not np.array_equal(a.test, c.test)
    parts = np.concatenate([a.train, a.valid, a.test])
    assert np.array_equal(np.sort(parts), np.arange(len(data)))  # a partition


def test_within_task_and_by_target():
    data = synthetic_dataset(n_groups=6, per_group=20)
    within = make_split(data, SplitSpec("within_task", seed=0))
    for part in (within.train, within.test):  # every task on both sides
        assert set(data.group[part]) == set(range(6))
    target = make_split(data, SplitSpec("by_target", holdout=("hw-b",)))
    hw = np.array(data.hardware_names)[data.candidate_hardware()]
    assert set(hw[target.test]) == {"hw-b"} and set(hw[target.train]) == {"hw-a"}


@pytest.mark.parametrize("spec, message", [
    (lambda: SplitSpec("random"), "unknown split 'random'"),
    (lambda: SplitSpec("by_network"), "needs holdout="),
    (lambda: SplitSpec("by_task", valid_fraction=0.6, test_fraction=0.5), "sum to less than 1"),
])
def test_bad_split_specs(spec, message):
    with pytest.raises(TenforgeError, match=message):
        spec()


def test_holdout_that_is_not_in_the_data():
    data = synthetic_dataset()
    with pytest.raises(TenforgeError, match="holdout network vgg is not in the dataset"):
        make_split(data, SplitSpec("by_network", holdout=("vgg",)))
    with pytest.raises(TenforgeError, match="holdout hardware hw-z is not in the dataset"):
        make_split(data, SplitSpec("by_target", holdout=("hw-z",)))


def test_rows_in_tasks_of_another_dataset(seed_data):
    from models.splits import rows_in_tasks_of, task_keys

    split = make_split(seed_data, SplitSpec("by_network", seed=0, holdout=("tiny_cnn",)))
    train = seed_data.subset(split.train)
    # a dataset with other rows and other group numbers: half the rows, reversed
    other = seed_data.subset(np.arange(len(seed_data))[::2][::-1])
    rows = rows_in_tasks_of(other, train)
    assert rows.size and set(task_keys(other.subset(rows))) <= set(task_keys(train))
    outside = np.setdiff1d(np.arange(len(other)), rows)
    assert not set(task_keys(other.subset(outside))) & set(task_keys(train))
    assert np.array_equal(rows_in_tasks_of(seed_data, train), split.train)
