"""What the compiled code of a CPU candidate does: counts read from its x86 assembly.

PerStoreFeature and the trace describe the schedule TVM hands to LLVM, not what LLVM makes of
it. Rank errors on held-out networks (docs/cost-models.md, session 66) put most of the gap on
convolutions whose pick runs 2x or more slower than the task's best; of the two read in TIR,
one pick vectorized only its init and write-back (its FMAs scalar) and one best had no
vectorized loop at all yet ran fastest (LLVM's own vectorizers at work). Neither shows in the
schedule's columns; both show in the instructions.

From the AT&T assembly LLVM prints for a built candidate this reads, over the compute
functions (the wrappers that check arguments are left out):
- the kernel loop: of the natural loops of each function's control-flow graph (a back edge to
  a block that dominates its source; LLVM lays rotated loops out across one another, so
  label-to-jump spans do not nest), the deepest one whose own body (the blocks no inner loop
  holds) does floating-point arithmetic, the one with most lanes at that depth; its FMAs by
  width, scalar FP operations, loads, broadcasts, stores, stack spills and size;
- the whole compute code: the same counts, statically (no trip counts), its loops and depth.
Columns are log2(1 + count) and a few figures of the kernel loop: FMA lanes per instruction,
loads and spills per FMA, the vector registers it names (accumulators and operands), and its
trip count where the latch compares with a constant. Pure text in, floats out: no TVM here
(tasks/compiled_code.py builds).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

import numpy as np

# Instruction classes counted (in the kernel loop and over the compute code)
CLASSES = ("instructions", "fma_zmm", "fma_ymm", "fma_xmm", "fma_scalar", "fp_packed",
           "fp_scalar", "loads", "broadcasts", "stores", "spills", "gathers", "branches")
KERNEL_RATIOS = ("fma_lanes_per_instruction", "loads_per_fma", "spills_per_fma",
                 "fp_lanes", "vector_registers", "trip_count")
SHAPE = ("loops", "max_depth", "kernel_depth")
ASM_NAMES = (tuple(f"kernel_{c}" for c in CLASSES) + KERNEL_RATIOS
             + tuple(f"code_{c}" for c in CLASSES) + SHAPE)
ASM_DIM = len(ASM_NAMES)  # stored as storage.feature_rows.ASM_EXTRACTOR rows

_LABEL = re.compile(r"^([.\w$]+):")
_FUNCTION = re.compile(r"^\s*\.type\s+([.\w$]+),@function", re.M)
_FMA = re.compile(r"^vf(n?m(add|sub)|madd|msub)\w*(ps|pd|ss|sd|ph|sh)$")
_FP_OP = re.compile(r"^v?(add|sub|mul|div|max|min|sqrt)(ps|pd|ss|sd)$")
# functions that only check arguments, raise, or convert half floats: not the computation
_NOT_COMPUTE = re.compile(r"^(__tvm_ffi_|__tvm_set_raised|__truncsf|__extendhf|__TVMBackend)")
_LANES = {"zmm": 16, "ymm": 8, "xmm": 4}
_VECTOR_REGISTER = re.compile(r"%[xyz]mm(\d+)")
_IMMEDIATE_COMPARE = re.compile(r"^\$(-?\d+),\s*(%\w+)$")
_IMMEDIATE_STEP = re.compile(r"^\$(\d+),\s*(%\w+)$")


def _width(operands: str) -> str:
    for register in ("zmm", "ymm", "xmm"):
        if f"%{register}" in operands:
            return register
    return "none"


def split_operands(operands: str) -> list[str]:
    """AT&T operands, split at the commas outside an address: "%zmm0, (%rdi,%rax,4)" is two."""
    parts, depth, current = [], 0, ""
    for char in operands:
        depth += (char == "(") - (char == ")")
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return parts + [current.strip()] if current.strip() else parts


def instruction_classes(mnemonic: str, operands: str) -> list[str]:
    """The CLASSES (besides "instructions") one instruction counts in."""
    out = []
    memory = "(" in operands
    # AT&T order: sources first, the destination last; memory in the last of several operands
    # is a store
    parts = split_operands(operands)
    if _FMA.match(mnemonic):
        out.append("fma_scalar" if mnemonic.endswith(("ss", "sd", "sh"))
                   else f"fma_{_width(operands) if _width(operands) != 'none' else 'xmm'}")
    elif _FP_OP.match(mnemonic):
        out.append("fp_scalar" if mnemonic.endswith(("ss", "sd")) else "fp_packed")
    if mnemonic.startswith(("vbroadcast", "vpbroadcast")):
        out.append("broadcasts")
    if mnemonic.startswith(("vgather", "vpgather")):
        out.append("gathers")
    if mnemonic.startswith("j"):
        out.append("branches")
    if memory and not mnemonic.startswith(("lea", "j", "call", "nop", "prefetch")):
        if len(parts) > 1 and "(" in parts[-1]:
            out.append("stores")
        else:
            out.append("loads")
        if "(%rsp)" in operands or "(%rbp)" in operands:
            out.append("spills")
    return out


def _lanes(mnemonic: str, operands: str) -> int:
    """FP lanes one arithmetic instruction computes (an FMA counts twice)."""
    scalar = mnemonic.endswith(("ss", "sd", "sh"))
    lanes = 1 if scalar else _LANES.get(_width(operands), 4)
    if mnemonic.endswith(("pd", "sd")) and not scalar:
        lanes //= 2
    return lanes * (2 if _FMA.match(mnemonic) else 1)


def trip_count(kernel: list[tuple[str, str]]) -> float:
    """The kernel loop's trip count where its latch reads it (`cmp $N, %r` with `add $s, %r`
    or `inc %r` on the same register: N / s); 0 where it does not (a bound in a register)."""
    steps: dict[str, int] = {}
    for mnemonic, operands in kernel:
        if mnemonic.startswith("inc"):
            steps[operands.strip()] = 1
        step = _IMMEDIATE_STEP.match(operands) if mnemonic.startswith("add") else None
        if step:
            steps[step.group(2)] = int(step.group(1))
    for mnemonic, operands in reversed(kernel):
        bound = _IMMEDIATE_COMPARE.match(operands) if mnemonic.startswith("cmp") else None
        if bound and steps.get(bound.group(2)):
            return max(0.0, int(bound.group(1)) / steps[bound.group(2)])
    return 0.0


def _compute_lines(asm: str) -> Iterator[tuple[str, str, str]]:
    """(kind, name, line) of the compute functions' lines, in order: ("type", "", line) for
    a `.type` line, ("function", name, line) where a function begins, ("label", name, line),
    ("insn", "", line); directives, comments and every other function left out."""
    functions = set(_FUNCTION.findall(asm))
    inside = False
    for line in asm.splitlines():
        function = _FUNCTION.match(line)
        if function:
            if not _NOT_COMPUTE.match(function.group(1).lstrip(".")):
                yield "type", "", line
            continue
        label = _LABEL.match(line)
        if label and label.group(1) in functions:
            inside = not _NOT_COMPUTE.match(label.group(1).lstrip("."))
            if inside:
                yield "function", label.group(1), line
        elif inside and label:
            yield "label", label.group(1), line
        elif inside and line.startswith("\t"):
            text = line.strip()
            if text and not text.startswith((".", "#")):
                yield "insn", "", line


def compute_text(asm: str) -> str:
    """The compute functions' lines of `asm` alone (their `.type` lines, labels and
    instructions): a third to a half of the text on convolutions, and asm_vector reads the
    same from it."""
    return "".join(line + "\n" for _, _, line in _compute_lines(asm))


def compute_instructions(asm: str) -> list[tuple[str, str, str]]:
    """(kind, a, b) of the compute functions' lines in order: ("function", name, "") where
    each begins, ("label", name, "") or ("insn", mnemonic, operands)."""
    out: list[tuple[str, str, str]] = []
    for kind, name, line in _compute_lines(asm):
        if kind == "insn":
            mnemonic, _, operands = line.strip().partition("\t")
            out.append(("insn", mnemonic, operands.split("#")[0].strip()))
        elif kind != "type":
            out.append((kind, name, ""))
    return out


def _functions(lines: list[tuple[str, str, str]]) -> list[list[tuple[str, str, str]]]:
    """`lines` cut at each ("function", ...) marker: one list per function."""
    out: list[list[tuple[str, str, str]]] = []
    for line in lines:
        if line[0] == "function" or not out:
            out.append([])
        if line[0] != "function":
            out[-1].append(line)
    return [f for f in out if f]


def _blocks(lines: list[tuple[str, str, str]]) -> tuple[list[list[tuple[str, str]]],
                                                        list[list[int]]]:
    """Basic blocks (their instructions) and each block's successors. A block starts at a
    label or after a jump and ends at a jump or before a label; calls fall through."""
    blocks: list[list[tuple[str, str]]] = [[]]
    names: dict[str, int] = {}
    for kind, a, b in lines:
        if kind == "label":
            if blocks[-1]:
                blocks.append([])
            names[a] = len(blocks) - 1
            continue
        blocks[-1].append((a, b))
        if a.startswith("j") or a.startswith("ret"):
            blocks.append([])
    successors: list[list[int]] = []
    for i, block in enumerate(blocks):
        last = block[-1] if block else ("", "")
        out = []
        if last[0].startswith("j") and last[1] in names:
            out.append(names[last[1]])
        falls = not (last[0] in ("jmp", "jmpq") or last[0].startswith("ret"))
        if falls and i + 1 < len(blocks):
            out.append(i + 1)
        successors.append(out)
    return blocks, successors


def _dominators(predecessors: list[list[int]]) -> list[set[int]]:
    """Each block's dominators from block 0 (the iterative data-flow algorithm; a few hundred
    blocks at most). An unreachable block is dominated by every block."""
    n = len(predecessors)
    every = set(range(n))
    dom = [every.copy() for _ in range(n)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for v in range(1, n):
            preds = [dom[u] for u in predecessors[v]]
            new = (set.intersection(*preds) if preds else every.copy()) | {v}
            if new != dom[v]:
                dom[v], changed = new, True
    return dom


def natural_loops(successors: list[list[int]]) -> list[set[int]]:
    """The blocks of each natural loop (back edge u -> h, h dominating u; loops sharing a
    header merged): what loops are, however LLVM laid the blocks out."""
    predecessors: list[list[int]] = [[] for _ in successors]
    for u, outs in enumerate(successors):
        for v in outs:
            predecessors[v].append(u)
    dom = _dominators(predecessors)
    by_header: dict[int, set[int]] = {}
    for u, outs in enumerate(successors):
        for h in outs:
            if h in dom[u] and len(dom[u]) < len(successors):  # reachable, and h dominates u
                body = by_header.setdefault(h, {h})
                stack = [u]
                while stack:
                    v = stack.pop()
                    if v not in body:
                        body.add(v)
                        stack.extend(predecessors[v])
    return list(by_header.values())


def _fp_lanes(insns: Iterable[tuple[str, str]], fma_only: bool = False) -> float:
    """FP lanes the instructions compute: FMAs (twice) and other FP arithmetic, or FMAs only."""
    return float(sum(_lanes(m, o) for m, o in insns
                     if _FMA.match(m) or (not fma_only and _FP_OP.match(m))))


def _counts(insns: Iterable[tuple[str, str]]) -> dict[str, float]:
    counts = dict.fromkeys(CLASSES, 0.0)
    for mnemonic, operands in insns:
        counts["instructions"] += 1
        for name in instruction_classes(mnemonic, operands):
            counts[name] += 1
    return counts


def asm_vector(asm: str) -> np.ndarray:
    """ASM_NAMES of one candidate's assembly, float32 [ASM_DIM]."""
    blocks: list[list[tuple[str, str]]] = []
    loops: list[set[int]] = []
    for function in _functions(compute_instructions(asm)):
        own_blocks, successors = _blocks(function)
        loops += [{b + len(blocks) for b in body} for body in natural_loops(successors)]
        blocks += own_blocks
    depth = np.zeros(len(blocks), np.int32)
    for body in loops:
        depth[list(body)] += 1
    kernel: list[tuple[str, str]] = []
    kernel_depth, best_lanes, best_rank = 0, -1.0, (-1, -1, -1.0)
    for body in loops:
        level = int(depth[list(body)].min())
        own = [insn for b in sorted(body) if depth[b] == level for insn in blocks[b]]
        lanes = _fp_lanes(own)
        fmas = any(_FMA.match(m) for m, _ in own)
        # A loop of FMAs is the reduction: it wins over an epilogue loop (a sigmoid's, a
        # bias add's) however deep that lies. Among those alike the deepest runs most often,
        # then the one with most lanes.
        rank = (int(fmas), level, lanes)
        if lanes > 0 and rank > best_rank:
            kernel, best_lanes, kernel_depth, best_rank = own, lanes, level, rank
    every = [insn for block in blocks for insn in block]
    if not kernel:  # straight-line code, or no loop computes: take the whole code
        kernel = every
        best_lanes = _fp_lanes(kernel)
    k = _counts(kernel)
    code = _counts(every)
    fmas = k["fma_zmm"] + k["fma_ymm"] + k["fma_xmm"] + k["fma_scalar"]
    fma_lanes = _fp_lanes(kernel, fma_only=True)
    registers = {r for _, o in kernel for r in _VECTOR_REGISTER.findall(o)}
    ratios = [fma_lanes / max(k["instructions"], 1.0), k["loads"] / max(fmas, 1.0),
              k["spills"] / max(fmas, 1.0), np.log2(1.0 + max(best_lanes, 0.0)),
              float(len(registers)), np.log2(1.0 + trip_count(kernel))]
    shape = [np.log2(1.0 + len(loops)), float(depth.max(initial=0)), float(kernel_depth)]
    return np.array([np.log2(1.0 + k[c]) for c in CLASSES] + ratios
                    + [np.log2(1.0 + code[c]) for c in CLASSES] + shape, np.float32)
