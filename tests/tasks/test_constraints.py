"""Resource-constraint rules on real scheduled TIR (tasks.constraints)."""

import dataclasses

import pytest

from core.hardware import HardwareProfile
from tasks.constraints import (
    REFUSED_ON,
    VALIDATED_ON,
    NarrowVectors,
    first_rejection,
    isa_family,
    loops,
    rules_for,
    rules_for_target,
)


def scheduled_matmul(inner: int):
    """A 64x64x64 matmul whose innermost loop is split by `inner`, vectorized, the outer
    parallel."""
    from tenforge.cli import bootstrap

    bootstrap()
    from core.tvm_env import load_tvm

    load_tvm("llvm")
    from tvm import s_tir, te

    a = te.placeholder((64, 64), name="a")
    b = te.placeholder((64, 64), name="b")
    k = te.reduce_axis((0, 64), name="k")
    c = te.compute((64, 64), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    sch = s_tir.Schedule(te.create_prim_func([a, b, c]))
    block = sch.get_sblock("c")
    i, j, kk = sch.get_loops(block)
    j_outer, j_inner = sch.split(j, [None, inner])
    sch.reorder(i, j_outer, kk, j_inner)
    sch.parallel(i)
    sch.vectorize(j_inner)
    return sch.mod["main"]


def test_loops_sees_kinds_and_extents():
    found = [(loop.kind, loop.extent) for loop in loops(scheduled_matmul(8))]
    assert found == [("parallel", 64), ("serial", 8), ("serial", 64), ("vectorized", 8)]


@pytest.mark.parametrize("inner, rejected", [(2, True), (3, True), (4, False), (16, False)])
def test_narrow_vectors_rule(inner, rejected):
    reason = NarrowVectors(min_lanes=4).reject(scheduled_matmul(inner))
    assert (reason is not None) == rejected
    if rejected:
        assert f"vectorized loop of {inner} lanes" in reason and "hold 8 float32" in reason


# Simulated CPUs: feature vectors as detection writes them, whatever CPU runs the tests.
AVX512 = {"vector_unit_bytes": 64, "has_sse42": 1, "has_avx": 1, "has_avx2": 1, "has_avx512f": 1}
AVX2 = {"vector_unit_bytes": 32, "has_sse42": 1, "has_avx": 1, "has_avx2": 1}
SSE42 = {"vector_unit_bytes": 16, "has_sse42": 1}


def cpu(features: dict) -> HardwareProfile:
    return HardwareProfile(name="simulated", target={"kind": "llvm", "num-cores": 1},
                           features=features)


def test_rules_follow_the_profiles_vector_width():
    avx2, sse42 = cpu(AVX2), cpu(SSE42)
    assert rules_for(avx2) == [NarrowVectors(4)]  # 32-byte vectors: 8 float32 lanes
    assert rules_for(sse42) == [NarrowVectors(2)]  # 16 bytes: 4 lanes
    assert first_rejection(rules_for(sse42), scheduled_matmul(2)) is None
    assert first_rejection(rules_for(avx2), scheduled_matmul(2)) is not None
    gpu = dataclasses.replace(avx2, target={"kind": "cuda", "arch": "sm_90"})
    assert rules_for(gpu) == []  # MetaSchedule's VerifyGPUCode checks GPU limits


def test_a_rule_is_on_only_where_it_was_validated():
    assert [isa_family("llvm", f) for f in (AVX512, AVX2, SSE42)] == ["avx512", "avx2", "sse42"]
    # AVX-512: its data said no (REFUSED_ON), so off by default; the bench still judges it
    assert rules_for(cpu(AVX512)) == []
    assert rules_for_target("llvm", AVX512, only_validated=False) == [NarrowVectors(8)]
    # a family is never both validated and refused for one rule
    for rule, families in REFUSED_ON.items():
        assert not set(families) & set(VALIDATED_ON.get(rule, {}))
    assert "avx512" in REFUSED_ON[NarrowVectors]
