"""Traces rewritten from one import's block names to another's (pure JSON, no TVM).

A task is stored once per structural hash (tasks.workload_hash), with the module of the first
import that brought it. Another import of the same computation can name its blocks otherwise:
a reduction block is named after the Relax variable of the graph it came from (`lv51_red` in
vgg11, `lv88_red` in resnet18), and structural hashing ignores names. A trace refers to
blocks by name (GetSBlock), so a trace sampled on one import's module does not replay on the
other's ("Cannot find a block with the name: lv51_red"): a shard from another store, or a
retune's own import, brings such traces. They are renamed to the stored module's names
where they enter the store.

The two modules' JSON (tvm.ir.save_json) differ only in those names when the computations
are the same: the same nodes in the same order, so their blocks pair up by position.
"""

from __future__ import annotations

import json

_BLOCK = "s_tir.SBlock"


def _block_names(nodes: list[dict]) -> list[str]:
    return [nodes[n["data"]["name_hint"]]["data"] for n in nodes if n.get("type") == _BLOCK]


def block_renaming(from_mod_json: str, to_mod_json: str) -> dict[str, str]:
    """Block name in `from_mod_json` -> the same block's name in `to_mod_json`, for the names
    that differ; empty when none does, or when the modules are not the same computation laid
    out alike (their nodes differ in more than names: nothing is safe to rename)."""
    if from_mod_json == to_mod_json:
        return {}
    try:
        a, b = json.loads(from_mod_json)["nodes"], json.loads(to_mod_json)["nodes"]
    except (ValueError, KeyError, TypeError):
        return {}
    if len(a) != len(b) or any(x.get("type") != y.get("type") for x, y in zip(a, b)):
        return {}
    try:
        pairs = list(zip(_block_names(a), _block_names(b)))
    except (KeyError, IndexError, TypeError):
        return {}
    names = {x for x, _ in pairs}
    changed = {x: y for x, y in pairs if x != y}
    # anything else that differs must be a string the renamed blocks' names are made from
    # (a buffer or variable named lv51 beside block lv51_red): otherwise not the same task
    for x, y in zip(a, b):
        if x != y and not (x.get("type") == y.get("type") == "ffi.String"):
            return {}
    return changed if len(changed) == len({y for y in changed.values()}) and \
        len(names) == len(pairs) else {}


def _renamed(name: str, renaming: dict[str, str]) -> str:
    """A block's new name; a block the schedule made from one keeps its suffix (RFactor's
    lv51_red_rf looked up again after the rfactor: lv88_red_rf)."""
    if name in renaming:
        return renaming[name]
    made_from = [old for old in renaming if name.startswith(old + "_")]
    if not made_from:
        return name
    old = max(made_from, key=len)
    return renaming[old] + name[len(old):]


def rename_blocks(trace_json: str, renaming: dict[str, str]) -> str:
    """`trace_json` with its GetSBlock names renamed (unchanged when nothing is to rename)."""
    if not renaming:
        return trace_json
    trace = json.loads(trace_json)
    for instruction in trace[0]:
        if instruction[0] == "GetSBlock" and instruction[2]:
            instruction[2][0] = _renamed(instruction[2][0], renaming)
    return json.dumps(trace)
