"""bench/layer_gap.py matches each tuned task to the PyTorch layer it computes, in both
layouts: a task's convolution read from its TIR buffers gives the same key as the module."""

import pytest

from bench.layer_gap import layer_key_of_module, layer_key_of_task
from tasks.networks import build_network
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET


def pytorch_keys_at(network: str, size: int) -> set:
    import torch

    model, inputs = build_network(network, 1, size)
    keys: set = set()
    hooks = [m.register_forward_hook(
        lambda mod, args, _out: keys.add(layer_key_of_module(mod, args[0])))
        for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(*inputs)
    for hook in hooks:
        hook.remove()
    return keys - {None}


@pytest.mark.parametrize("graph", ["exported", "nhwc"])
def test_every_conv_and_dense_task_is_matched_to_its_pytorch_layer(graph):
    tasks = extract_network_tasks("resnet18", 1, 64, LOCAL_TARGET, graph)
    keys = {layer_key_of_task(t.mod_json, LOCAL_TARGET, graph) for t in tasks} - {None}
    want = pytorch_keys_at("resnet18", 64)
    assert len(want) == 12  # 11 distinct convolutions and the classifier
    assert keys == want  # every layer found, none made up (stride-2, 1x1 and the stem too)
