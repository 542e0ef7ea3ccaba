"""The packed8 / packed16 graphs (tasks/blocked_matmul.py): a linear layer's weight packed in
blocks of columns at load, its matmul computed in blocks and written back, the same numbers
as PyTorch; matmuls the block does not divide, or of two activations, left as they were."""

import numpy as np
import pytest

from core.graphs import PACKED_MATMULS
from tasks.workloads import import_with_weights, split_into_tasks
from tests.conftest import LOCAL_TARGET
from tests.tasks.graph_helpers import run_untuned, user_network

# A transformer's feed-forward block (16 -> 32 -> 16, GELU, residual), then a matmul of two
# activations whose 16 columns either block divides (it is no weight: it must stay), then a
# head of 5 columns (no block divides them).
LINEAR_CODE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Linear(16, 32)
        self.down = nn.Linear(32, 16)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        y = x + self.down(nn.functional.gelu(self.up(x)))
        mixed = y[0] @ y[0]
        return self.head(mixed)


def make():
    torch.manual_seed(0)
    return Net().eval(), (torch.randn(1, 16, 16),)
'''


@pytest.fixture(scope="module")
def linear_network(tmp_path_factory):
    return user_network(tmp_path_factory.mktemp("packed"), "feed_forward", LINEAR_CODE)


@pytest.mark.parametrize("graph", PACKED_MATMULS)
def test_packed_matmuls_compute_what_pytorch_computes(linear_network, graph):
    workload, x, want = linear_network
    fused, weights, _ = import_with_weights(workload, 1, None, graph)
    np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=1e-4, atol=1e-5)


def test_weights_arrive_packed_where_the_block_divides_their_columns(linear_network):
    workload = linear_network[0]
    shapes = {graph: [w.shape for w in import_with_weights(workload, 1, None, graph)[1]]
              for graph in ("nchw8c", *PACKED_MATMULS)}
    # up (32 columns): blocks of 8 and of 16; down (16): of 8 only (one block of 16 is the
    # weight as it was); head (5): neither, it keeps its (5, 16) weight
    assert (4, 16, 8) in shapes["packed8"] and (2, 32, 8) in shapes["packed8"]
    assert (2, 16, 16) in shapes["packed16"] and (32, 16) in shapes["packed16"]
    for graph in PACKED_MATMULS:
        assert not any(len(s) == 3 for s in shapes["nchw8c"]), shapes
        assert sum(len(s) == 3 for s in shapes[graph]) == (2 if graph == "packed8" else 1)
        assert (16, 5) in shapes[graph] or (5, 16) in shapes[graph], shapes[graph]


def test_the_blocked_matmul_keeps_its_bias_add_and_the_activations_matmul_stays(
        linear_network):
    workload = linear_network[0]
    names = [t.task_name for t in split_into_tasks(
        import_with_weights(workload, 1, None, "packed8")[0], LOCAL_TARGET)]
    blocked = [n for n in names if "matmul_blocked" in n]
    assert len(blocked) == 2 and all("add" in n for n in blocked), names
    # the two activations' matmul, and the head's, as in the unpacked graph
    assert sum("matmul" in n and "blocked" not in n for n in names) == 2, names
    # the packing ran once at load: no inference repacks a weight
    assert not any("pack_weight" in n for n in names), names


def test_a_matmul_built_without_an_out_dtype_is_packed_in_its_operands_dtype():
    """A module not from the PyTorch frontend may build relax.matmul without out_dtype (None):
    the blocked matmul then sums in the operands' dtype, and computes x @ w."""
    from core.tvm_env import load_tvm

    tvm = load_tvm(LOCAL_TARGET)
    from tvm import relax

    from tasks.blocked_matmul import pack_weight_matmuls

    x = relax.Var("x", relax.TensorType((4, 8), "float32"))
    w = relax.Var("w", relax.TensorType((8, 16), "float32"))
    builder = relax.BlockBuilder()
    with builder.function("main", [x, w], attrs={"num_input": 1}):
        with builder.dataflow():
            y = builder.emit_output(relax.op.matmul(x, w))
        builder.emit_func_output(y)
    mod = pack_weight_matmuls(8)(builder.get())
    assert {gv.name_hint for gv in mod.functions} >= {"pack_weight", "matmul_blocked"}
    vm = relax.VirtualMachine(relax.build(mod, target=tvm.target.Target("llvm")), tvm.cpu())
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((4, 8), "float32"), rng.standard_normal((8, 16), "float32")
    got = vm["main"](tvm.runtime.tensor(a), tvm.runtime.tensor(b)).numpy()
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5)
