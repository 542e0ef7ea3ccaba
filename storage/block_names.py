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
are the same: the same nodes in the same order, so their blocks pair up by position. Some
shipped shards hold traces sampled on a module they do not carry (an older collect sampled the
fresh import): for those, a name the stored module lacks is matched to its one block named the
same but for the Relax variable's number (`guessed_renaming`).
"""

from __future__ import annotations

import json
import re

_BLOCK = "s_tir.SBlock"
_LOOKUP = re.compile(r'\["GetSBlock", \[\], \["([^"]+)"')
# a Relax variable's name in a block name: lv, lv51 (the graph's first variable is plain lv)
_VARIABLE = re.compile(r"(?<![A-Za-z0-9])lv\d*(?![A-Za-z])")


def variable_lookups(trace_json: str) -> set[str]:
    """The block names a trace looks up that are made from a Relax variable (lvNN_...): the
    only ones another import names otherwise. Read without parsing the trace."""
    return {n for n in _LOOKUP.findall(trace_json) if _VARIABLE.match(n)}


def module_blocks(mod_json: str) -> set[str]:
    """The block names of a module's JSON (tvm.ir.save_json)."""
    try:
        return set(_block_names(json.loads(mod_json)["nodes"]))
    except (ValueError, KeyError, IndexError, TypeError):
        return set()


def _known(name: str, blocks: set[str]) -> bool:
    """A block of the module, or one the schedule made from one (lv397_red_rf)."""
    return name in blocks or any(name.startswith(block + "_") for block in blocks)


def guessed_renaming(lookups: set[str], blocks: set[str]) -> dict[str, str]:
    """Old name -> block of `blocks`, for the looked-up names the module has no block of:
    each is matched, by its longest prefix that matches at all, to the one block named alike
    but for its variable's number (lv200_red -> lv397_red; lv200_red_rf then follows it in
    rename_blocks). Empty when any such name has no single match: nothing is guessed half."""
    def shape(name: str) -> str:
        return _VARIABLE.sub("lv#", name)

    by_shape: dict[str, list[str]] = {}
    for block in blocks:
        by_shape.setdefault(shape(block), []).append(block)
    out: dict[str, str] = {}
    for name in sorted(n for n in lookups if not _known(n, blocks)):
        parts = name.split("_")
        prefixes = ["_".join(parts[:k]) for k in range(len(parts), 0, -1)]
        found = next((p for p in prefixes if by_shape.get(shape(p))), None)
        if found is None or len(by_shape[shape(found)]) != 1:
            return {}
        out[found] = by_shape[shape(found)][0]
    return out


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
