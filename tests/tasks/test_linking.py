"""tasks.measure.linking: candidates linked by ld directly, TVM's g++ link where ld cannot."""

import subprocess

import numpy as np
import pytest
import tvm
from tvm.script import tirx as T
from tvm.support import cc

from tasks.measure import linking


@T.prim_func
def exp_plus_one(A: T.Buffer((64,), "float32"), B: T.Buffer((64,), "float32")):
    # exp may become a libm call: the library must resolve it as a g++-linked one does
    for i in range(64):
        B[i] = T.exp(A[i]) + T.float32(1)


@pytest.fixture
def g_plus_plus_calls(monkeypatch):
    """Records every call of TVM's own link (g++), which then does nothing."""
    calls = []
    monkeypatch.setattr(cc, "create_shared", lambda output, objects, **kw: calls.append(
        (output, list(objects), kw)))
    return calls


@pytest.mark.slow
def test_a_candidate_linked_by_ld_loads_and_computes_what_numpy_does(tmp_path, monkeypatch):
    if linking.ld_and_libgcc() is None:
        pytest.skip("no ld or no libgcc.a on this machine: TVM's own link is used")

    def refuse(*_, **__):
        raise AssertionError("ld was available, yet TVM's g++ link ran")

    monkeypatch.setattr(cc, "create_shared", refuse)
    lib = tvm.compile(tvm.IRModule({"main": exp_plus_one}), target="llvm")
    path = str(tmp_path / "candidate.so")
    linking.export_candidate(lib, path)
    needed = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
    assert "libstdc++" not in needed  # linked without the C++ runtime it never calls

    a = np.linspace(-2, 2, 64, dtype="float32")
    dev = tvm.cpu(0)
    out = tvm.runtime.tensor(np.zeros(64, "float32"), dev)
    tvm.runtime.load_module(path)["main"](tvm.runtime.tensor(a, dev), out)
    np.testing.assert_allclose(out.numpy(), np.exp(a) + 1, rtol=1e-5)


def test_without_ld_the_candidate_goes_to_tvms_own_link(monkeypatch, g_plus_plus_calls):
    monkeypatch.setattr(linking, "ld_and_libgcc", lambda: None)
    linking.link_shared("out.so", ["lib0.o"])
    assert g_plus_plus_calls == [("out.so", ["lib0.o"], {"options": None})]


@pytest.mark.parametrize("objects, options", [
    (["lib0.o", "devc.c"], None),  # a C source must be compiled: not ld's job
    (["lib0.o"], ["-I/include"]),  # compiler options asked for
    ([], None),
])
def test_inputs_that_are_not_plain_objects_go_to_tvms_own_link(objects, options, monkeypatch,
                                                                g_plus_plus_calls):
    monkeypatch.setattr(linking, "ld_and_libgcc", lambda: ("ld", "libgcc.a"))
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("ld must not run"))
    linking.link_shared("out.so", objects, options=options)
    assert g_plus_plus_calls == [("out.so", objects, {"options": options})]


def test_a_failing_ld_falls_back_to_tvms_own_link(monkeypatch, g_plus_plus_calls):
    monkeypatch.setattr(linking, "ld_and_libgcc", lambda: ("ld", "libgcc.a"))
    ran = []

    def failing_ld(cmd, **_):
        ran.append(cmd)
        return subprocess.CompletedProcess(cmd, 1, b"", b"ld: incompatible object")

    monkeypatch.setattr(subprocess, "run", failing_ld)
    linking.link_shared("out.so", ["lib0.o"])
    assert ran == [["ld", "-shared", "--as-needed", "-o", "out.so", "lib0.o", "libgcc.a",
                    "-lm", "-lc"]]
    assert [c[0] for c in g_plus_plus_calls] == ["out.so"]
