"""storage/block_names.py: traces sampled on one import of a task, renamed to the block names
of the module the store keeps for it (another import of the same computation)."""

import json
import re
from pathlib import Path

import pytest

from storage.block_names import (
    block_renaming,
    guessed_renaming,
    rename_blocks,
    variable_lookups,
)
from storage.seed import SEED_DIR, load_shard, read_shard
from storage.store import Store
from tests.conftest import SMALL_SEED_PROFILE

# A seed shard with a global-average-pool `mean` task whose reduction block is named after
# the importing graph's Relax variable (lvNN_red): what another import names otherwise.
SHARD = next((SEED_DIR / SMALL_SEED_PROFILE).glob("*-resnet18+mobilenet_v2+bert-*.json"))
MEAN_TASK = "0x9c87ef28bca7b798"


def _module(*names: str, extra: str = "x") -> str:
    """A module's JSON in tvm.ir.save_json's form: one string node per block name, and a
    block node naming it."""
    nodes = [{"type": "None"}, {"type": "ffi.String", "data": extra}]
    for name in names:
        nodes.append({"type": "ffi.String", "data": name})
        nodes.append({"type": "s_tir.SBlock", "data": {"name_hint": len(nodes) - 1}})
    return json.dumps({"root_index": 0, "nodes": nodes})


def test_blocks_pair_up_by_position_and_only_alike_modules_are_renamed():
    ours = _module("root", "lv88_red", "lv88")
    assert block_renaming(_module("root", "lv51_red", "lv51"), ours) == {
        "lv51_red": "lv88_red", "lv51": "lv88"}
    assert block_renaming(ours, ours) == {}
    # another buffer name is not a reason, nor a block to rename
    assert block_renaming(_module("root", "lv88_red", "lv88", extra="y"), ours) == {}
    # other computations (another node, another layout of nodes) are never renamed
    assert block_renaming(_module("root", "lv51_red"), ours) == {}
    other = json.loads(_module("root", "lv51_red", "lv51"))
    other["nodes"][1] = {"type": "ir.IntImm", "data": {"value": 3}}
    assert block_renaming(json.dumps(other), ours) == {}
    assert block_renaming("not json", ours) == {}


def test_only_the_trace_s_block_lookups_are_renamed():
    trace = json.dumps([[["GetSBlock", [], ["lv51_red", "main"], ["b0"]],
                         ["GetSBlock", [], ["root", "main"], ["b1"]],
                         ["Annotate", ["b0", 1], ["lv51_red"], []],
                         ["GetSBlock", [], ["lv51_red_rf", "main"], ["b2"]],
                         ["GetSBlock", [], ["lv511_red", "main"], ["b3"]]], []])
    renamed = json.loads(rename_blocks(trace, {"lv51_red": "lv88_red", "lv51": "lv88"}))
    assert renamed[0][0][2] == ["lv88_red", "main"] and renamed[0][1][2] == ["root", "main"]
    assert renamed[0][2][2] == ["lv51_red"]  # not a block lookup: left alone
    # a block the schedule made from a renamed one (RFactor's) keeps its suffix; another
    # name that merely starts alike is not one of them
    assert renamed[0][3][2][0] == "lv88_red_rf" and renamed[0][4][2][0] == "lv511_red"
    assert rename_blocks(trace, {}) is trace


def test_a_name_the_module_lacks_is_matched_to_its_one_block_named_alike():
    blocks = {"root", "T_layer_norm", "lv195_mean", "lv195_sum", "lv195_var_sum"}
    trace = json.dumps([[["GetSBlock", [], [name, "main"], [f"b{i}"]] for i, name in
                         enumerate(["lv_mean", "lv_sum", "lv_var_sum_rf", "root"])], []])
    assert variable_lookups(trace) == {"lv_mean", "lv_sum", "lv_var_sum_rf"}
    renaming = guessed_renaming(variable_lookups(trace), blocks)
    # the graph's first variable is plain `lv`; a block RFactor made follows its source
    assert renaming == {"lv_mean": "lv195_mean", "lv_sum": "lv195_sum",
                        "lv_var_sum": "lv195_var_sum"}
    assert variable_lookups(rename_blocks(trace, renaming)) == {
        "lv195_mean", "lv195_sum", "lv195_var_sum_rf"}
    # names the module has (or made from them) need nothing; two blocks alike: no guess
    assert guessed_renaming({"lv195_sum", "lv195_sum_rf"}, blocks) == {}
    assert guessed_renaming({"lv7_red"}, {"lv1_red", "lv2_red"}) == {}
    assert guessed_renaming({"lv7_red", "lv7"}, {"lv1_red"}) == {}  # one with no match: none


def _renamed_module(mod_json: str) -> tuple[str, dict[str, str]]:
    """`mod_json` as another import would write it: its lvNN names numbered otherwise."""
    names = sorted(set(re.findall(r'"(lv\d+(?:_red)?)"', mod_json)))
    assert names, "the task names its blocks after a Relax variable"
    new = {n: re.sub(r"\d+", lambda m: str(int(m.group()) + 900), n, count=1) for n in names}
    return re.sub(r'"(lv\d+(?:_red)?)"', lambda m: f'"{new[m.group(1)]}"', mod_json), new


def test_a_shard_s_traces_take_the_stored_module_s_block_names(db):
    manifest, cands, tasks = read_shard(Path(SHARD))
    theirs = {r["workload_hash"]: r for r in tasks.to_pylist()}[MEAN_TASK]
    ours, new = _renamed_module(theirs["mod_json"])
    with Store(db) as store:
        # the store had the task first, from another import
        store.con.execute("INSERT INTO tasks (workload_hash, task_name, flops, mod_json) "
                          "VALUES (?, ?, ?, ?)", [MEAN_TASK, theirs["task_name"],
                                                  theirs["flops"], ours])
        with store.transaction():
            load_shard(store, manifest, cands, tasks)
        stored = [t for (t,) in store.query(
            "SELECT trace_json FROM candidates JOIN tasks USING (task_id) WHERE "
            "workload_hash = ?", [MEAN_TASK])]
        other = store.query("SELECT c.trace_json FROM candidates c JOIN tasks t USING "
                            "(task_id) WHERE t.workload_hash <> ? ORDER BY 1", [MEAN_TASK])
    assert stored and all(any(f'"{n}"' in t for n in new.values()) for t in stored)
    assert not any(f'"{n}", "main"' in t for t in stored for n in new)
    shard_traces = sorted(r["trace_json"] for r in cands.to_pylist()
                          if r["workload_hash"] != MEAN_TASK)
    assert [t for (t,) in other] == shard_traces  # every other task's traces as they came


@pytest.mark.slow
def test_a_renamed_trace_replays_on_the_other_import_and_schedules_the_same():
    from core.tvm_env import load_tvm
    from tasks.sampling import scheduled_module

    manifest, cands, tasks = read_shard(Path(SHARD))
    theirs = {r["workload_hash"]: r for r in tasks.to_pylist()}[MEAN_TASK]["mod_json"]
    row = next(r for r in cands.to_pylist() if r["workload_hash"] == MEAN_TASK)
    ours, _ = _renamed_module(theirs)
    tvm = load_tvm(manifest["hardware"]["target_json"])
    from tvm.s_tir.meta_schedule.utils import shash2hex

    with pytest.raises(Exception, match="Cannot find a block with the name"):
        scheduled_module(tvm.ir.load_json(ours), row["trace_json"])
    trace = rename_blocks(row["trace_json"], block_renaming(theirs, ours))
    assert shash2hex(scheduled_module(tvm.ir.load_json(ours), trace)) == row["schedule_hash"]


def _mean_task_store(db: str, mod_json: str | None = None) -> None:
    """A store of the shard's mean task alone; `mod_json`: the module it already kept for
    the task (another import's)."""
    import pyarrow.compute as pc

    manifest, cands, tasks = read_shard(Path(SHARD))
    cands = cands.filter(pc.equal(cands.column("workload_hash"), MEAN_TASK))
    tasks = tasks.filter(pc.equal(tasks.column("workload_hash"), MEAN_TASK))
    with Store(db) as store:
        if mod_json is not None:
            row = tasks.to_pylist()[0]
            store.con.execute("INSERT INTO tasks (workload_hash, task_name, flops, mod_json) "
                              "VALUES (?, ?, ?, ?)", [MEAN_TASK, row["task_name"], row["flops"],
                                                      mod_json])
        with store.transaction():
            load_shard(store, manifest, cands, tasks)


@pytest.mark.slow
def test_ms_databases_round_trip_across_imports_and_an_old_store_exports_what_replays(
        tmp_path):
    from storage.ms_database import export_ms, import_ms
    from tasks.hardware import detect_local_profiles

    theirs = {r["workload_hash"]: r for r in read_shard(Path(SHARD))[2].to_pylist()}
    ours, new = _renamed_module(theirs[MEAN_TASK]["mod_json"])
    first = str(tmp_path / "first.duckdb")
    _mean_task_store(first)
    exported = export_ms(first, SMALL_SEED_PROFILE, tmp_path / "ms")
    assert exported["records"] > 0 and exported["skipped"] == {}
    # imported into a store that kept another import's module: the traces take its names
    other = str(tmp_path / "other.duckdb")
    with Store(other) as store:
        store.con.execute("INSERT INTO tasks (workload_hash, task_name, flops, mod_json) "
                          "VALUES (?, 'mean', 1, ?)", [MEAN_TASK, ours])
    import_ms(tmp_path / "ms", detect_local_profiles()[0], other)
    with Store(other, read_only=True) as store:
        traces = [t for (t,) in store.query("SELECT trace_json FROM candidates")]
    assert len(traces) == exported["records"]
    assert all(any(f'"{n}"' in t for n in new.values()) for t in traces)
    # a store written before the renaming existed (its traces another import's): the export
    # leaves those out and says why, instead of failing on the first
    old = str(tmp_path / "old.duckdb")
    _mean_task_store(old)
    with Store(old) as store:
        store.con.execute("UPDATE tasks SET mod_json = ? WHERE workload_hash = ?",
                          [ours, MEAN_TASK])
    kept = export_ms(old, SMALL_SEED_PROFILE, tmp_path / "ms-old")
    assert kept["records"] == 0
    [(message, times)] = kept["skipped"].items()
    assert "Cannot find a block with the name" in message and times == exported["records"]


@pytest.mark.slow
def test_every_loaded_trace_that_looks_up_a_variable_s_block_replays_on_its_stored_task(db):
    """A shipped shard whose traces were sampled on a module it does not carry (lv200_red
    beside its module's lv397_red, an older collect's): loaded, every trace replays."""
    from core.tvm_env import load_tvm
    from storage.seed import load_shards
    from tasks.sampling import scheduled_module

    load_shards(db, SEED_DIR, hardware=[SMALL_SEED_PROFILE], progress=lambda _: None)
    with Store(db, read_only=True) as store:
        target = json.loads(store.scalar("SELECT target_json FROM hardware"))
        rows = store.query("SELECT t.mod_json, c.trace_json FROM candidates c JOIN tasks t "
                           "USING (task_id) WHERE c.trace_json LIKE '%GetSBlock\", [], [\"lv%'")
    assert len(rows) > 100
    tvm = load_tvm(target)
    modules: dict[str, object] = {}
    for mod_json, trace in rows:
        mod = modules.setdefault(mod_json, tvm.ir.load_json(mod_json))
        scheduled_module(mod, trace)  # raises "Cannot find a block" for a stale name
