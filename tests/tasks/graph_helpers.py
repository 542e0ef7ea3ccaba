"""Helpers of the graph preparations' tests: build a prepared graph with untuned schedules
and run it, and make a user's network from code with PyTorch's output for its input."""

from tasks.sources import resolve_workload
from tests.conftest import LOCAL_TARGET


def run_untuned(fused, weights, x):
    from core.tvm_env import load_tvm

    tvm = load_tvm(LOCAL_TARGET)
    from tvm import relax
    from tvm.s_tir import meta_schedule as ms

    from tasks.measure.network import compile_network

    executable, _ = compile_network(tvm, fused, ms.database.MemoryDatabase(),
                                    tvm.target.Target(LOCAL_TARGET))
    out = relax.VirtualMachine(executable, tvm.cpu())["main"](
        tvm.runtime.tensor(x), *[tvm.runtime.tensor(w) for w in weights])
    return (out if hasattr(out, "numpy") else out[0]).numpy()


def user_network(tmp_path, name, code):
    """The network that `code`'s make() builds, as a workload, with its input and PyTorch's
    output for it."""
    import torch

    from tasks.user_models import factory_module

    path = tmp_path / f"{name}.py"
    path.write_text(code)
    workload = resolve_workload(f"{path}:make")
    model, (x,) = factory_module(workload)
    with torch.no_grad():
        return workload, x.numpy(), model(x).numpy()
