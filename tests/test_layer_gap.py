"""bench/layer_gap.py matches each tuned task to the PyTorch layer it computes, in both
layouts: a task's convolution read from its TIR buffers gives the same key as the module."""

import pytest

from bench.layer_gap import layer_calls, layer_key_of_module, layer_key_of_task
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET


@pytest.mark.parametrize("graph", ["exported", "nhwc"])
def test_every_conv_and_dense_task_is_matched_to_its_pytorch_layer(graph):
    tasks = extract_network_tasks("resnet18", 1, 64, LOCAL_TARGET, graph)
    keys = {layer_key_of_task(t.mod_json, LOCAL_TARGET, graph) for t in tasks} - {None}
    want = {layer_key_of_module(m, args[0]) for m, args in layer_calls("resnet18", 64)} - {None}
    assert len(want) == 12  # 11 distinct convolutions and the classifier
    assert keys == want  # every layer found, none made up (stride-2, 1x1 and the stem too)
