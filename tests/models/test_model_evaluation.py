"""`tenforge models evaluate`: a model scored network by network on a store's measurements,
checked against the network-level top-1 computed here from the raw rows; its lineage says which
networks it trained on; bad requests are refused in one line."""

import json
import shutil

import numpy as np
import pytest

from models.dataset import network_family
from tests.conftest import SEED_PROFILE, assert_refused, run_cli_table


@pytest.fixture(scope="module")
def answers(pretrained_store, tmp_path_factory):
    """Every request of this module through the CLI's main(), in one process."""
    db, model_id = pretrained_store
    empty = str(tmp_path_factory.mktemp("empty") / "none.duckdb")
    elsewhere = _a_cpu_only_the_store_knows(db)
    cases = [
        ["models", "evaluate", model_id, "--hardware", SEED_PROFILE, "--json", "--db", db],
        ["models", "evaluate", model_id, "--hardware", SEED_PROFILE, "--networks",
         "resnet18,mlp", "--db", db],
        ["models", "evaluate", "no-such-model", "--db", db],
        ["models", "evaluate", model_id, "--networks", "alexnet", "--db", db],
        ["models", "evaluate", model_id, "--hardware", "cpu-never-measured-1t", "--db", db],
        ["models", "evaluate", model_id, "--db", empty],
        ["models", "evaluate", "shipped", "--hardware", elsewhere, "--json", "--db", db],
        ["models", "evaluate", "shipped", "--hardware", "tpu-v9", "--db", db],
        ["models", "evaluate", model_id, "--hardware", SEED_PROFILE, "--networks",
         "resnet18+nhwc", "--json", "--db", db],
        ["models", "evaluate", model_id, "--hardware", SEED_PROFILE, "--latency", "median",
         "--json", "--db", db],
        ["models", "evaluate", model_id, "--latency", "min", "--db", db],
        ["models", "evaluate", "shipped", "--hardware", f"{SEED_PROFILE},{elsewhere}",
         "--db", db],
    ]
    return dict(zip(["json", "table", "unknown", "network", "hardware", "no store",
                     "shipped elsewhere", "shipped nowhere", "graph", "median", "bad latency",
                     "two profiles"],
                    run_cli_table(cases)))


def _a_cpu_only_the_store_knows(db):
    """An x86 profile the seed holds data of that this machine does not know (the seed comes
    from more than one machine, so whatever CPU runs this, one of them is another's)."""
    from storage.store import Store
    from tasks.hardware import all_profiles

    here = set(all_profiles())
    with Store(db, read_only=True) as store:
        stored = [n for (n,) in store.query("SELECT name FROM hardware WHERE target_kind = "
                                            "'llvm' AND arch = 'x86_64' ORDER BY name")]
    return next(n for n in stored if n not in here)


def _top1_by_hand(db, model_id, network, statistic=np.mean):
    """TenSet's network-level top-1, from the raw repeats: per task of the network, the
    latency (`statistic` of a measurement's repeats) of the model's first pick against the
    task's best, weighted by how often the network runs the task. Candidates tied at the top
    score are each the pick by a coin toss: charged their mean."""
    from models.dataset import DataSpec, load_dataset
    from models.registry import load_model
    from storage.store import Store

    data = load_dataset(db, DataSpec(hardware=(SEED_PROFILE,)))
    with Store(db, read_only=True) as store:
        path = store.model_row(model_id)["path"]
        repeats = dict(store.query("SELECT candidate_id, run_secs FROM measurements"))
    scores = load_model(path).predict(data)
    latency = np.array([statistic(repeats[int(c)]) if np.isfinite(t) else np.inf
                        for c, t in zip(data.candidate_id, data.latency)])
    num = den = 0.0
    for g in np.unique(data.group):
        weight = data.workload_networks.get(data.group_workload[g], {}).get(network)
        rows = np.flatnonzero(data.group == g)
        if weight is None or not np.isfinite(latency[rows]).any():
            continue
        picks = rows[scores[rows] == scores[rows].max()]
        num += weight * latency[rows].min()
        den += weight * latency[picks].mean()
    return num / den


def test_the_json_scores_every_network_and_match_a_count_by_hand(answers, pretrained_store):
    db, model_id = pretrained_store
    assert answers["json"]["code"] == 0, answers["json"]["stderr"][-2000:]
    result = json.loads(answers["json"]["stdout"])
    for key in ("networks", "mean_network_top1", "mean_network_top5", "peak1", "peak5",
                "pairwise"):
        assert key in result
    assert result["model"] == model_id and result["hardware"] == [SEED_PROFILE]
    nets = result["networks"]
    # a network the seed holds at several sizes is labelled NAME@SIZE[:BATCH], one per size
    assert {"resnet18", "mobilenet_v2", "bert", "mlp"} <= {network_family(n) for n in nets}
    for values in nets.values():
        assert 0 < values["top1"] <= values["top5"] <= 1
        assert values["in_training"] is True  # pre-trained on every task of the seed
    assert result["mean_network_top1"] == pytest.approx(np.mean([v["top1"] for v in
                                                                 nets.values()]))
    assert 0 < result["peak1"] <= result["peak5"] <= 1 and 0.5 < result["pairwise"] <= 1
    for label in (n for n in nets if network_family(n) == "resnet18"):
        assert nets[label]["top1"] == pytest.approx(_top1_by_hand(db, model_id, label))
    assert result["latency"] == "mean"


def test_median_charges_each_pick_the_median_of_its_repeats(answers, pretrained_store):
    db, model_id = pretrained_store
    assert answers["median"]["code"] == 0, answers["median"]["stderr"][-2000:]
    result = json.loads(answers["median"]["stdout"])
    mean = json.loads(answers["json"]["stdout"])
    assert result["latency"] == "median" and result["networks"].keys() == mean["networks"].keys()
    for label in (n for n in result["networks"] if network_family(n) == "resnet18"):
        assert result["networks"][label]["top1"] == pytest.approx(
            _top1_by_hand(db, model_id, label, np.median))


def test_the_table_names_the_model_its_networks_and_the_mean(answers, pretrained_store):
    _, model_id = pretrained_store
    table = answers["table"]
    assert table["code"] == 0, table["stderr"][-2000:]
    lines = table["stdout"].splitlines()
    assert model_id in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[3:] if line.strip()}
    families = {network_family(r) for r in rows}
    assert families >= {"mlp", "resnet18", "mean"} and "bert" not in families
    # resnet18 names every size of it, not its prepared graphs (their tasks are scored apart)
    assert not [r for r in rows if "+" in r]
    assert all(row[1] == "yes" for r, row in rows.items()  # in its training data
               if network_family(r) == "resnet18")
    assert "pairwise" in table["stdout"]


def test_the_shipped_model_scores_a_cpu_this_machine_cannot_run(answers):
    # a fleet's central store scores models on every machine's data, not only its own
    answer = answers["shipped elsewhere"]
    assert answer["code"] == 0, answer["stderr"][-2000:]
    result = json.loads(answer["stdout"])
    assert result["model"].startswith("shipped-") and len(result["hardware"]) == 1
    assert 0 < result["mean_network_top1"] <= 1


def test_two_profiles_get_a_row_each_beside_the_mean_over_them(answers, pretrained_store):
    answer = answers["two profiles"]
    assert answer["code"] == 0, answer["stderr"][-2000:]
    lines = answer["stdout"].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("profile "))
    rows = {line.split()[0]: line.split()[1:3] for line in lines[header + 2:header + 4]}
    assert set(rows) == {SEED_PROFILE, _a_cpu_only_the_store_knows(pretrained_store[0])}
    assert all(0 < float(top1) <= float(top5) <= 1 for top1, top5 in rows.values())


def test_a_prepared_graph_is_scored_on_its_own_tasks(answers, pretrained_store):
    """`--networks resnet18+nhwc` scores the NHWC tasks (the seed's resnet18+nhwc shard), not
    the exported resnet18's tasks that its name's family would give."""
    from storage.store import Store

    answer = answers["graph"]
    assert answer["code"] == 0, answer["stderr"][-2000:]
    result = json.loads(answer["stdout"])
    assert set(result["networks"]) == {"resnet18+nhwc"}
    assert result["networks"]["resnet18+nhwc"]["in_training"] is True  # the whole seed
    with Store(pretrained_store[0], read_only=True) as store:
        # the tasks with something to rank (models.dataset.DataSpec.min_candidates)
        measured = store.scalar(
            "SELECT count(*) FROM (SELECT c.task_id FROM candidates c JOIN measurements m "
            "USING (candidate_id) JOIN hardware h ON h.hardware_id = c.hardware_id WHERE "
            "h.name = ? AND c.task_id IN (SELECT task_id FROM network_tasks JOIN networks "
            "USING (network_id) WHERE name = 'resnet18+nhwc') GROUP BY c.task_id "
            "HAVING count(DISTINCT c.candidate_id) >= 2 AND bool_or(m.error_kind IS NULL))",
            [SEED_PROFILE])
    assert result["tasks"] == measured > 10


@pytest.mark.parametrize("case, message", [
    ("shipped nowhere", "nor does the store"),
    ("unknown", "no model 'no-such-model'"),
    ("network", "network alexnet has no data"),
    ("hardware", "hardware cpu-never-measured-1t has no data"),
    ("no store", "no store at"),
    ("bad latency", "invalid choice: 'min'"),
])
def test_bad_evaluations_are_refused(answers, case, message):
    assert_refused(answers[case], message)


def test_a_network_at_several_sizes_is_scored_per_size_and_held_out_whole(seed_store,
                                                                         tmp_path):
    """Labels: the name where the store holds one instance, NAME@SIZE[:BATCH] where several;
    a by_network split on the name holds out every instance."""
    from models.dataset import DataSpec, load_dataset
    from models.splits import SplitSpec, make_split
    from storage.store import Store

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    with Store(db) as store:
        (task_id,) = store.query("SELECT min(task_id) FROM network_tasks JOIN networks USING "
                                 "(network_id) WHERE name = 'resnet18'")[0]
        size = store.scalar("SELECT input_size FROM networks WHERE name = 'resnet18'")
        other = store.upsert_network("resnet18", 4, 160)
        store.con.execute("INSERT INTO network_tasks (network_id, task_id, weight) VALUES "
                          "(?, ?, 1)", [other, task_id])
    data = load_dataset(db, DataSpec(hardware=(SEED_PROFILE,)))
    labels = {n for nets in data.workload_networks.values() for n in nets}
    assert {f"resnet18@{size}", "resnet18@160:4", "mlp"} <= labels and "resnet18" not in labels
    split = make_split(data, SplitSpec("by_network", holdout=("resnet18",)))
    held = set(data.group_workload[data.group[split.test]])
    # every instance, prepared graphs too (resnet18+nhwc, core/graphs.py): one family
    assert held == {w for w, nets in data.workload_networks.items()
                    if any(network_family(n) == "resnet18" for n in nets)} & \
        set(data.group_workload[data.group])
    graphs = {w for w, nets in data.workload_networks.items()
              if any(n.startswith("resnet18+") for n in nets)} & \
        set(data.group_workload[data.group])  # (one-candidate tasks are not in the data)
    assert graphs and graphs <= held  # the seed's NHWC resnet18 shard is on this profile
    assert not held & set(data.group_workload[data.group[split.train]])
