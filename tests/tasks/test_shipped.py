"""The cost model the repository ships: it loads on a fresh clone, its lineage names the seed
shards that trained it (checksums match) and the networks held out of its training, its
recorded held-out score is what `models evaluate shipped` measures on the seed, and retune and
onboard take it when a store has no model of its own."""

import json
import platform
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from core.errors import TenforgeError
from storage.seed import SEED_DIR
from tasks.hardware import resolve_profile
from tasks.shipped import (
    lineage_shard_path,
    require_shipped_for,
    shipped_for,
    shipped_models,
)
from tests.conftest import SEED_PROFILE, SMALL_SEED_PROFILE

x86_only = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                              reason="the shipped model is for x86_64 CPUs; this is "
                                     f"{platform.machine()}")


def test_a_shipped_model_loads_and_its_lineage_names_its_data():
    from models.registry import load_model

    models = shipped_models()
    assert models, "dataset/models/ holds no shipped model"
    newest = models[0]
    load_model(newest.path)
    lineage = newest.lineage
    assert lineage["shipped"] and lineage["tvm_version"] and lineage["command"]
    held = set(lineage["split"]["holdout"])
    assert held and not held & set(lineage["trained_networks"])
    # the very files that trained it; one that left the capped seed since (to make room for a
    # new CPU) stays in git history and docs/seed-dataset.md names it
    datasheet = (SEED_DIR.parents[1] / "docs" / "seed-dataset.md").read_text()
    for shard in lineage["shards"]:
        path = lineage_shard_path(shard["shard"])
        if not path.exists():
            assert path.name.removesuffix(".json") in datasheet, \
                f"{shard['shard']} trained the shipped model, is gone and is not named"
            continue
        manifest = json.loads(path.read_text())
        assert manifest["files"] == shard["files"]
    weights = [p for p in newest.path.rglob("*") if p.is_file()]  # a bag's members in folders
    # a few MB at most: five members' text trees from 59k training rows are 8.7 MB (the bag
    # of session 53), 3.8 MB gzipped (since session 54)
    assert sum(p.stat().st_size for p in weights) < 5 * 2**20


@x86_only
def test_the_recorded_held_out_score_is_what_evaluate_measures_on_its_shards(tmp_path):
    """On the shards its lineage names (the seed grows after a model ships: new shards add
    networks and sizes, so the whole seed scores it on more than it was scored on)."""
    from storage.ingest import ingest_shards
    from tasks.model_evaluation import evaluate_model

    shipped = shipped_models()[0]
    shards = tmp_path / "shards"
    for number, shard in enumerate(shipped.lineage["shards"]):
        manifest = lineage_shard_path(shard["shard"])
        folder = shards / f"{number:04d}"  # each in its own: seed and extra names may repeat
        folder.mkdir(parents=True)
        for part in manifest.parent.glob(manifest.name.removesuffix(".json") + ".*"):
            shutil.copy(part, folder)
    db = str(tmp_path / "store.duckdb")
    ingest_shards(db, [shards], progress=lambda _: None)
    recorded = shipped.lineage["held_out"]
    held = tuple(shipped.lineage["split"]["holdout"])
    measured = evaluate_model("shipped", db, tuple(recorded["hardware"]), held)
    assert measured["model"] == shipped.model_id
    # equal predicted scores (trees give many) rank by row order: a model shipped before rows
    # were ordered by content (schedule hash) was scored in an order no load now gives
    assert measured["mean_network_top1"] == pytest.approx(recorded["mean_network_top1"],
                                                          abs=1e-4)
    assert all(v["in_training"] is False for v in measured["networks"].values())


@x86_only
def test_a_fresh_store_retunes_with_the_shipped_model(tmp_path):
    from tasks.retune import validate_retune

    spec = validate_retune(str(tmp_path / "fresh.duckdb"), "tiny_cnn", "local-1t", 8, None,
                           None, "gradient", 0.9, 1, 0)
    shipped = shipped_for(resolve_profile("local-1t"))
    assert spec.cost_model == shipped.model_id and spec.model_path == str(shipped.path)
    assert "shipped with tenforge; this store has no model of its own" in spec.model_choice
    asked = validate_retune(str(tmp_path / "fresh.duckdb"), "tiny_cnn", "local-1t", 8, None,
                            "shipped", "gradient", 0.9, 1, 0)
    assert asked.cost_model == shipped.model_id and ": as asked;" in asked.model_choice
    assert not (tmp_path / "fresh.duckdb").exists()  # validation writes nothing


@x86_only
def test_onboard_registers_the_shipped_model_as_parent(seed_store, tmp_path):
    from storage.store import Store
    from tasks.onboard import shipped_parent

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    parent = shipped_parent(db, resolve_profile("local").name)
    assert parent == shipped_parent(db, resolve_profile("local").name)  # registered once
    with Store(db, read_only=True) as store:
        row = store.model_row(parent)
    assert row["kind"] == shipped_models()[0].kind and row["path"].endswith(parent)


def test_a_cpu_nothing_was_shipped_for_is_refused_in_one_line():
    other = replace(resolve_profile("local"), arch="riscv64")
    with pytest.raises(TenforgeError, match="no shipped model for .*riscv64"):
        require_shipped_for(other)
    assert shipped_for(other) is None


@x86_only
def test_the_gate_registers_a_retrained_model_only_if_it_ranks_unseen_networks_better(
        seed_store, tmp_path):
    """tasks/model_gate.py: rivals are the models that held out some of the new model's
    held-out networks (the shipped one here), compared on those; a model that cannot beat
    them is not registered."""
    from storage.store import Store
    from tasks.model_gate import rivals
    from tasks.training import train_and_register

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    shipped = shipped_models()[0]
    held = tuple(shipped.lineage["split"]["holdout"])
    profiles = tuple(shipped.lineage["data_spec"]["hardware"])
    assert rivals(db, held, profiles)[shipped.model_id].networks == held
    # holding out more than the shipped model did does not skip it: compared on its networks
    # (it trained on tiny_cnn, which would flatter it); one that shares none is no rival
    assert rivals(db, ("tiny_cnn", *held), profiles)[shipped.model_id].networks == held
    assert shipped.model_id not in rivals(db, ("tiny_cnn",), profiles)
    # the shipped rival is the one for the target of the new model's rows: rows of no stored
    # target (so of no target anything was shipped for) meet no shipped rival
    assert shipped.model_id not in rivals(db, held, ("a-profile-the-store-lacks",))
    split = {"kind": "by_network", "seed": 0, "holdout": list(held)}
    data = {"hardware": list(profiles), "traces": True}
    lines: list[str] = []
    weak = train_and_register(db, data, split, "xgb", {"n_estimators": 1, "max_depth": 1}, 0,
                              log=lambda _: None, register_if_better=True)
    assert weak["model_id"] is None and not weak["gate"]["wins"]
    assert weak["gate"]["best_rival"] == shipped.model_id
    more = train_and_register(db, data, {**split, "holdout": [*held, "tiny_cnn"]}, "xgb",
                              {"n_estimators": 1, "max_depth": 1}, 0, log=lines.append,
                              register_if_better=True)
    score = more["gate"]["rivals"][shipped.model_id]
    assert more["model_id"] is None and score["networks"] == list(held)
    assert score["mine"] < score["theirs"] and not more["gate"]["wins"]
    assert lines[-1].startswith(f"not registered: on held-out networks {', '.join(held)} (of ")
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT count(*) FROM models") == 0
    plain = train_and_register(db, data, split, "xgb", {"n_estimators": 1, "max_depth": 1}, 0,
                               log=lambda _: None)  # no gate: registered whatever it scores
    assert plain["model_id"] is not None


def test_the_shipped_rival_is_the_model_shipped_for_the_target_of_the_rows(seed_store,
                                                                             tmp_path):
    """A store holding an aarch64 profile beside the seed's x86 ones, and a shipped folder
    with a model for each: a model trained on the aarch64 rows meets the aarch64 model as its
    shipped rival, one trained on the x86 rows the x86 model, one trained on both meets both."""
    from storage.store import Store
    from tasks.model_gate import rivals

    folder = tmp_path / "shipped"
    x86, arm = "shipped-lgbm-llvm-x86_64-20261101T0000", "shipped-lgbm-llvm-aarch64-20261101T0000"
    _ship(folder, x86, ["resnet50"])
    _ship(folder, arm, ["resnet50"], arch="aarch64")
    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    arm_profile = replace(resolve_profile("local-1t"), name="an-aarch64-board-1t", arch="aarch64")
    with Store(db) as store:
        store.upsert_hardware(arm_profile.as_row())
    held, x86_rows = ("resnet50",), (SEED_PROFILE,)  # a seed profile: x86_64 rows
    assert set(rivals(db, held, (arm_profile.name,), folder)) == {arm}
    assert set(rivals(db, held, x86_rows, folder)) == {x86}
    assert set(rivals(db, held, (*x86_rows, arm_profile.name), folder)) == {x86, arm}


@x86_only
def test_pretrain_with_a_holdout_is_gated_the_same_way(seed_store, tmp_path):
    from storage.store import Store
    from tasks.training import pretrain
    from tasks.training_specs import validate_pretrain

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    shipped = shipped_models()[0]
    held = tuple(shipped.lineage["split"]["holdout"])
    hardware = shipped.lineage["data_spec"]["hardware"]
    weak = pretrain(db, hardware, [], "xgb", {"n_estimators": 1, "max_depth": 1}, None, 0, None,
                    log=lambda _: None, holdout=held, register_if_better=True)
    assert weak["model_id"] is None and weak["gate"]["best_rival"] == shipped.model_id
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT count(*) FROM models") == 0
    kept = pretrain(db, hardware, [], "xgb", {"n_estimators": 1, "max_depth": 1}, None, 0, None,
                    log=lambda _: None, holdout=held)  # scored, not gated: registered
    lineage = json.loads((Path(kept["path"]) / "model.json").read_text())["lineage"]
    assert not set(held) & set(lineage["trained_networks"])  # what it trained on, not more
    with pytest.raises(TenforgeError, match="name them with --holdout NETWORKS"):
        validate_pretrain(db, None, "xgb", None, None, None, register_if_better=True)
    with pytest.raises(TenforgeError, match="holdout network vgg19 has no measurements"):
        validate_pretrain(db, None, "xgb", None, None, None, ["vgg19"], True)


def test_a_holdout_no_profile_collected_is_refused_before_training(seed_store):
    """A profile that measured only the tasks a network shares with networks collected there
    (the Xeons' 7 of resnet50's 40) cannot score it as a held-out network: refused up front,
    not after the model trained (where the gate would find nothing to score)."""
    from storage.queries import network_coverage_shares
    from storage.store import Store
    from tasks.training_specs import check_holdout_collected, validate_pretrain, validate_search

    with Store(seed_store, read_only=True) as store:
        profiles = [h for (h,) in store.query("SELECT name FROM hardware ORDER BY 1")]
        shares = {h: network_coverage_shares(store, [h]) for h in profiles}
    # the seed holds such a sliver: a profile with part of a network another one collected
    hw, net = next((h, n) for h in profiles for n, share in shares[h].items()
                   if 0 < share < 0.5 and any(shares[o].get(n, 0) >= 0.5 for o in profiles))
    with pytest.raises(TenforgeError, match=rf"holdout network {re.escape(net)} \([\d.]+% of "
                       rf"its work\) was not collected on {hw}: .* collect it first"):
        validate_pretrain(seed_store, [hw], "xgb", None, None, None, [net], True)
    with pytest.raises(TenforgeError, match=rf"holdout network {re.escape(net)} .* not collected"):
        validate_search(seed_store, [hw], None, "by_network", [net], ["xgb"], 1, 60, "peak1",
                        False, 0, 1, None, register_if_better=True)
    collected = next(o for o in profiles if shares[o].get(net, 0) >= 0.5)
    check_holdout_collected(seed_store, (hw, collected), (net,))  # scored on the other: fine


def test_a_model_trained_for_tuning_a_network_never_saw_a_task_it_shares(seed_store, tmp_path):
    """bench/tuning_matrix.py's models: a held-out network's task that a training network
    shares stays out as well (its rows may come from tuning the held-out network itself)."""
    from models.dataset import DataSpec, load_dataset
    from models.splits import rows_of_networks
    from storage.store import Store
    from tasks.training import pretrain

    db = str(tmp_path / "store.duckdb")
    shutil.copy(seed_store, db)
    hardware, others = [SMALL_SEED_PROFILE], ["resnet50", "inception"]
    data = load_dataset(db, DataSpec(hardware=tuple(hardware), networks=tuple(others)))
    shared = rows_of_networks(data, ["resnet18"])
    assert shared.any() and not shared.all()  # resnet50 shares some of resnet18's tasks
    runs = {}
    for drop in ((), ("resnet18",)):
        out = pretrain(db, hardware, others, "xgb", {"n_estimators": 1, "max_depth": 1}, None,
                       0, None, log=lambda _: None, drop_tasks_of=drop)
        with Store(db, read_only=True) as store:
            row = store.model_row(out["model_id"])
        lineage = json.loads((Path(out["path"]) / "model.json").read_text())["lineage"]
        runs[drop] = (row["train_rows"], lineage.get("tasks_dropped_of"))
    (all_rows, no_drop), (kept_rows, dropped) = runs[()], runs[("resnet18",)]
    assert no_drop is None and dropped == ["resnet18"]
    assert kept_rows < all_rows  # (the validation tasks differ with the rows: no exact count)


def test_the_newest_shipped_model_is_told_by_its_stamp_not_its_family(tmp_path):
    """Ids end in their UTC stamp; a newer lgbm must win over an older xgb ("x" > "l")."""
    for model_id in ("shipped-xgb-llvm-x86_64-20260101T0000",
                     "shipped-lgbm-llvm-x86_64-20260201T0000"):
        (tmp_path / model_id).mkdir()
        (tmp_path / model_id / "model.json").write_text(json.dumps(
            {"kind": model_id.split("-")[1], "lineage": {"shipped": True, "arch": "x86_64",
                                                         "target_kind": "llvm"}}))
    assert [m.model_id for m in shipped_models(tmp_path)] == [
        "shipped-lgbm-llvm-x86_64-20260201T0000", "shipped-xgb-llvm-x86_64-20260101T0000"]


def _ship(folder: Path, model_id: str, holdout: list[str], arch: str = "x86_64") -> None:
    (folder / model_id).mkdir(parents=True)
    lineage = {"shipped": True, "arch": arch, "target_kind": "llvm",
               "split": {"kind": "by_network", "holdout": holdout}}
    (folder / model_id / "model.json").write_text(json.dumps({"kind": "lgbm",
                                                              "lineage": lineage}))


def test_a_new_model_must_beat_the_newest_shipped_one_on_the_networks_both_held_out(
        tmp_path):
    from tasks.shipped import shipped_to_beat

    _ship(tmp_path, "shipped-lgbm-llvm-x86_64-20261101T0000", ["resnet50", "bert"])
    _ship(tmp_path, "shipped-xgb-llvm-x86_64-20261102T0000", ["resnet50", "bert", "vit"])
    _ship(tmp_path, "shipped-xgb-llvm-aarch64-20261103T0000", ["resnet50"], arch="aarch64")
    current, on, why = shipped_to_beat("llvm", "x86_64", ("resnet50", "bert"), tmp_path)
    assert current.model_id == "shipped-xgb-llvm-x86_64-20261102T0000"  # the newest, by stamp
    assert on == ("resnet50", "bert")
    # holding out more than the shipped model did does not skip the gate: compared on resnet50
    # (the shipped model trained on bert, so a score there would flatter it)
    current, on, why = shipped_to_beat("llvm", "aarch64", ("resnet50", "bert"), tmp_path)
    assert current.model_id == "shipped-xgb-llvm-aarch64-20261103T0000" and on == ("resnet50",)
    assert why.endswith("compared on resnet50")
    current, on, why = shipped_to_beat("llvm", "aarch64", ("bert", "vit"), tmp_path)
    assert current is None and on == () and "not compared" in why  # it trained on both
    current, on, why = shipped_to_beat("cuda", "x86_64", ("resnet50",), tmp_path)
    assert current is None and why == "no model shipped for cuda, x86_64"
