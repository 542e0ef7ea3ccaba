"""Reference outputs: the unscheduled function's outer loops run in parallel, and a GPU task's
reference is built for this host's own CPU; neither may change one output bit."""

import numpy as np
import pytest
import tvm
from tvm import te, topi
from tvm.script import tirx as T
from tvm.target import codegen

from core.hardware import HardwareProfile
from core.procs import usable_cores
from tasks.measure.measurer import overlaps_builds, runner_threads
from tasks.measure.reference import parallel_outer_loops, reference_target


def _conv_module(dtype: str) -> tvm.IRModule:
    data = te.placeholder((2, 3, 12, 12), dtype, name="data")
    weight = te.placeholder((4, 3, 3, 3), dtype, name="weight")
    conv = topi.nn.conv2d_nchw(data, weight, stride=2, padding=1, dilation=1)
    out = topi.nn.relu(topi.cast(conv, "float32"))
    return tvm.IRModule({"main": te.create_prim_func([data, weight, out])})


@T.prim_func(s_tir=True)
def reduction_outermost(A: T.Buffer((8, 4), "float32"), B: T.Buffer((4,), "float32")):
    # The reduction loop is outermost: running its iterations in parallel would race on B.
    for k, i in T.grid(8, 4):
        with T.sblock("B"):
            vk, vi = T.axis.remap("RS", [k, i])
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] + A[vk, vi]


@T.prim_func
def opaque_scan(A: T.Buffer((16,), "float32"), B: T.Buffer((16,), "float32")):
    # No block iterators at all: each iteration reads the one before, nothing may run apart.
    for i in range(15):
        B[i + 1] = B[i] + A[i]


def _outputs(mod: tvm.IRModule, inputs: list[np.ndarray]) -> list[np.ndarray]:
    lib = tvm.compile(mod, target=reference_target({"kind": "cuda"}))
    tensors = [tvm.runtime.tensor(a, tvm.cpu(0)) for a in inputs]
    lib["main"](*tensors)
    return [t.numpy() for t in tensors]


def _parallel_loops(mod: tvm.IRModule) -> int:
    return mod.script().count("T.parallel(")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_every_block_of_a_convolution_runs_its_outer_loops_in_parallel_bit_for_bit(dtype):
    mod = _conv_module(dtype)
    scheduled = parallel_outer_loops(mod)
    # padding, convolution, cast and relu: four blocks, each one fused parallel loop
    assert _parallel_loops(scheduled) == 4, scheduled.script()
    rng = np.random.default_rng(0)
    inputs = [rng.uniform(-1, 1, (2, 3, 12, 12)).astype(dtype),
              rng.uniform(-1, 1, (4, 3, 3, 3)).astype(dtype), np.zeros((2, 4, 6, 6), "float32")]
    want, got = _outputs(mod, inputs), _outputs(scheduled, inputs)
    assert np.abs(want[2]).max() > 0
    assert all(np.array_equal(w, g) for w, g in zip(want, got))


def test_loops_that_carry_a_reduction_or_an_opaque_block_stay_serial():
    for func in (reduction_outermost, opaque_scan):
        mod = tvm.IRModule({"main": func})
        assert _parallel_loops(parallel_outer_loops(mod)) == 0, func


def test_a_gpu_reference_is_built_for_this_hosts_cpu_and_a_cpu_reference_on_the_target():
    assert reference_target({"kind": "cuda", "arch": "sm_90a"}) == {
        "kind": "llvm", "mcpu": str(codegen.llvm_get_system_cpu())}
    assert reference_target({"kind": "llvm", "mcpu": "znver3"}) is None


def test_the_runner_behind_a_gpu_has_every_core_builds_ahead_and_a_cpu_runner_does_neither():
    gpu = HardwareProfile(name="gpu-test", target={"kind": "cuda", "arch": "sm_90a"})
    cpu = HardwareProfile(name="cpu-test", target={"kind": "llvm", "num-cores": 1},
                          num_threads=1)
    assert runner_threads(gpu) == usable_cores()
    assert runner_threads(cpu) == 1
    # a GPU collect builds ahead beside its runs; a CPU's builds would share its timed cores
    assert overlaps_builds(gpu) and not overlaps_builds(cpu)
