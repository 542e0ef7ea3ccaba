"""models/asm_features.py on hand-written assembly: which loop is the kernel, what it counts."""

from __future__ import annotations

import numpy as np
import pytest

from models.asm_features import (
    ASM_DIM,
    ASM_NAMES,
    asm_vector,
    compute_instructions,
    compute_text,
    instruction_classes,
    natural_loops,
    split_operands,
    trip_count,
)

# A wrapper that checks its arguments in a loop (not the computation), then a compute function:
# an outer loop whose epilogue adds and stores, around an inner loop of 3 zmm FMAs fed by a
# load, a broadcast and a spill reload. LLVM lays the inner loop out below its latch block
# (the backward jump is a jne to a label above it), as rotated loops are.
ASM = """\t.text
\t.type\t__tvm_ffi_main,@function
__tvm_ffi_main:
.LBB0_1:
\tcmpl\t$4, 16(%rax)
\tvaddps\t%zmm1, %zmm2, %zmm3
\tjne\t.LBB0_1
\tretq
\t.type\tmain_compute_,@function
main_compute_:
\tmovq\t%rdi, %rax
.LBB1_1:
\tvxorps\t%xmm0, %xmm0, %xmm0
.LBB1_2:
\tvmovups\t(%rax,%rcx,4), %zmm1
\tvbroadcastss\t4(%rdx), %zmm2
\tvmovups\t64(%rsp), %zmm5
\tvfmadd231ps\t%zmm1, %zmm2, %zmm0
\tvfmadd231ps\t%zmm5, %zmm2, %zmm3
\tvfmadd231ps\t(%rsi), %zmm2, %zmm4
\taddq\t$1, %rcx
\tcmpq\t$64, %rcx
\tjne\t.LBB1_2
\tvaddps\t%zmm0, %zmm3, %zmm0
\tvmovups\t%zmm0, (%r8)
\taddq\t$1, %r9
\tcmpq\t$8, %r9
\tjne\t.LBB1_1
\tretq
\t.type\t__TVMBackendAllocWorkspace,@function
__TVMBackendAllocWorkspace:
\tvfmadd231ps\t%zmm1, %zmm2, %zmm0
\tretq
"""


def named(vector: np.ndarray) -> dict[str, float]:
    return dict(zip(ASM_NAMES, vector.tolist()))


def count(value: float) -> float:
    """A log2(1 + count) column back to its count."""
    return round(2 ** value - 1, 3)  # float32 columns


def test_the_kernel_is_the_deepest_loop_that_computes() -> None:
    v = named(asm_vector(ASM))
    assert len(ASM_NAMES) == ASM_DIM
    assert count(v["kernel_fma_zmm"]) == 3
    assert count(v["kernel_instructions"]) == 9
    assert count(v["kernel_loads"]) == 4  # two vmovups, the broadcast and the FMA's operand
    assert count(v["kernel_broadcasts"]) == 1
    assert count(v["kernel_spills"]) == 1
    assert count(v["kernel_stores"]) == 0  # the store is the outer loop's epilogue
    assert count(v["kernel_fp_packed"]) == 0
    assert v["kernel_depth"] == 2 and v["max_depth"] == 2
    assert v["fma_lanes_per_instruction"] == pytest.approx(3 * 32 / 9)
    assert v["loads_per_fma"] == pytest.approx(4 / 3)
    assert v["vector_registers"] == 6  # zmm0-5
    assert count(v["trip_count"]) == 64  # cmpq $64 on the register addq $1 steps
    # the whole compute code, without the argument-checking wrapper or the runtime's helpers
    assert count(v["code_fma_zmm"]) == 3 and count(v["code_fp_packed"]) == 1
    assert count(v["code_stores"]) == 1 and count(v["loops"]) == 2


def test_wrappers_and_runtime_helpers_are_not_the_computation() -> None:
    kinds = [line for line in compute_instructions(ASM) if line[0] == "function"]
    assert [name for _, name, _ in kinds] == ["main_compute_"]


def test_straight_line_code_is_its_own_kernel() -> None:
    text = ("\t.type\tf_compute_,@function\nf_compute_:\n\tvmulss\t%xmm1, %xmm2, %xmm0\n"
            "\tvfmadd213sd\t%xmm1, %xmm2, %xmm0\n\tvmovss\t%xmm0, (%rdi)\n\tretq\n")
    v = named(asm_vector(text))
    assert count(v["kernel_fma_scalar"]) == 1 and count(v["kernel_fp_scalar"]) == 1
    assert count(v["kernel_stores"]) == 1 and v["kernel_depth"] == 0 and count(v["loops"]) == 0


def test_no_code_gives_zeros_not_an_error() -> None:
    assert not asm_vector("").any()


@pytest.mark.parametrize("mnemonic, operands, classes", [
    ("vfmadd231ps", "%ymm1, %ymm2, %ymm0", ["fma_ymm"]),
    ("vfnmadd213ps", "(%rax), %zmm2, %zmm0", ["fma_zmm", "loads"]),
    ("vfmadd231ss", "%xmm1, %xmm2, %xmm0", ["fma_scalar"]),
    ("vmaxps", "%zmm1, %zmm2, %zmm0", ["fp_packed"]),
    ("vaddss", "4(%rsp), %xmm2, %xmm0", ["fp_scalar", "loads", "spills"]),
    ("vmovaps", "%zmm0, 128(%rsp)", ["stores", "spills"]),
    ("vmovups", "%zmm0, (%rdi,%rax,4)", ["stores"]),
    ("leaq", "8(%rax), %rcx", []),
    ("vgatherdps", "(%rax,%zmm1,4), %zmm0 {%k1}", ["gathers", "loads"]),
    ("jne", ".LBB0_3", ["branches"]),
])
def test_instruction_classes(mnemonic: str, operands: str, classes: list[str]) -> None:
    assert instruction_classes(mnemonic, operands) == classes


def test_a_loop_laid_out_across_another_is_found_by_its_back_edge() -> None:
    # blocks 1-2 loop (2 -> 1) inside 0-3 (3 -> 0); 4 leaves
    successors = [[1], [2], [1, 3], [0, 4], []]
    loops = sorted(sorted(body) for body in natural_loops(successors))
    assert loops == [[0, 1, 2, 3], [1, 2]]


def test_operands_split_outside_addresses() -> None:
    assert split_operands("%zmm0, (%rdi,%rax,4)") == ["%zmm0", "(%rdi,%rax,4)"]
    assert split_operands("$8, %r9") == ["$8", "%r9"]
    assert split_operands("") == []


@pytest.mark.parametrize("latch, trips", [
    ([("addq", "$4, %rcx"), ("cmpq", "$64, %rcx"), ("jne", ".L")], 16),
    ([("incq", "%rax"), ("cmpq", "$7, %rax"), ("jb", ".L")], 7),
    ([("addq", "$1, %rcx"), ("cmpq", "%rdx, %rcx"), ("jne", ".L")], 0),  # bound in a register
    ([("cmpq", "$8, %rcx"), ("jne", ".L")], 0),  # no step seen
])
def test_trip_count_from_the_latch(latch: list, trips: float) -> None:
    assert trip_count(latch) == trips


def test_a_tree_model_takes_the_asm_block_and_refuses_data_without_it():
    from dataclasses import replace

    from core.errors import TenforgeError
    from models.metrics import pairwise_accuracy, per_task
    from models.registry import create_model
    from tests.models.synthetic import synthetic_dataset

    data = synthetic_dataset()
    # one assembly column says which candidates are fast: the model must find it there
    asm = np.zeros((len(data), ASM_DIM), np.float32)
    asm[:, 0] = np.where(np.isfinite(data.latency), -np.log(data.latency), -99)
    with_asm = replace(data, asm=asm)
    assert np.array_equal(with_asm.subset(np.arange(5, 9)).asm, asm[5:9])
    model = create_model("lgbm", seed=0, asm_features=True, n_estimators=30)
    model.fit(with_asm, None)
    scores = model.predict(with_asm)
    plain = create_model("lgbm", seed=0, n_estimators=30)
    plain.fit(data, None)
    assert per_task(pairwise_accuracy, data.label, scores, data.group) > \
        per_task(pairwise_accuracy, data.label, plain.predict(data), data.group)
    with pytest.raises(TenforgeError, match="assembly features"):
        model.predict(data)
    # it reads what costs a build a candidate: it says so, and a search may not rank with it
    from models.ms_adapter import LearnedCostModel

    assert model.takes_asm and not plain.takes_asm
    with pytest.raises(TenforgeError, match="not a search's thousands"):
        LearnedCostModel(model, "cpu-example-1t", np.zeros(4, np.float32))


def test_an_fma_loop_is_the_kernel_over_a_deeper_epilogue_loop():
    # the reduction (FMAs) at depth 1; a sigmoid-like epilogue nested two deep after it
    text = ("\t.type\tf_compute_,@function\nf_compute_:\n.LBB0_1:\n"
            "\tvfmadd231ps\t%ymm1, %ymm2, %ymm0\n\tjne\t.LBB0_1\n"
            ".LBB0_2:\n\tmovq\t%rdi, %rax\n.LBB0_3:\n\tvmulps\t%zmm1, %zmm2, %zmm0\n"
            "\tvaddps\t%zmm1, %zmm2, %zmm0\n"
            "\tjne\t.LBB0_3\n\tjne\t.LBB0_2\n\tretq\n")
    v = named(asm_vector(text))
    assert count(v["kernel_fma_ymm"]) == 1 and count(v["kernel_fp_packed"]) == 0
    assert v["kernel_depth"] == 1 and v["max_depth"] == 2


def test_the_compute_text_reads_the_same_as_the_whole_assembly():
    kept = compute_text(ASM)
    assert "__tvm_ffi_main" not in kept and "__TVMBackendAllocWorkspace" not in kept
    assert np.array_equal(asm_vector(kept), asm_vector(ASM))
