"""The zoo: networks import into Relax and split into tasks with FLOPs and weights."""

import pytest
import torch

from core.errors import TenforgeError
from tasks.networks import ZOO, build_network
from tasks.workloads import extract_network_tasks
from tests.conftest import LOCAL_TARGET


def test_every_zoo_network_builds_and_runs_in_torch():
    small = {"mlp": 8, "dense_bias_relu": 8, "matmul": 8, "mlp_wide": 8, "mlp_deep": 8,
             "bert": 4, "bert_tiny": 4, "gpt2": 4, "vgg11": 32, "densenet121": 32,
             "efficientnet_b0": 32, "convnext": 32, "vit": 32}
    for name in ZOO:
        model, inputs = build_network(name, 1, small.get(name))
        if name in ("resnet50", "resnext50", "inception", "bert", "mobilenet_v2"):
            continue  # built (shapes checked by torch), not run: keeps the suite fast
        with torch.no_grad():
            assert model(*inputs) is not None


def test_tasks_carry_flops_weights_and_distinct_hashes():
    tasks = extract_network_tasks("tiny_cnn", 1, 16, LOCAL_TARGET)
    assert len(tasks) >= 3
    assert len({t.workload_hash for t in tasks}) == len(tasks)
    conv = [t for t in tasks if "conv2d" in t.task_name]
    assert conv and all(t.flops > 0 and t.weight >= 1 for t in conv)


def test_repeated_layers_are_one_task_with_a_weight():
    tasks = extract_network_tasks("resnet18", 1, 32, LOCAL_TARGET)
    assert max(t.weight for t in tasks) >= 2  # ResNet repeats identical blocks


def test_the_newer_families_bring_their_own_operators():
    """ConvNeXt's 7x7 depthwise conv and layer norm, GPT-2's causal mask: tasks no ResNet,
    MobileNet or BERT has (tasks/architectures.py)."""
    convnext = extract_network_tasks("convnext", 1, 32, LOCAL_TARGET)
    names = " ".join(t.task_name for t in convnext)
    assert "layer_norm" in names and "conv2d" in names
    assert any(t.flops > 0 and "conv2d" in t.task_name for t in convnext)
    gpt2 = extract_network_tasks("gpt2", 1, 8, LOCAL_TARGET)
    bert = extract_network_tasks("bert", 1, 8, LOCAL_TARGET)
    assert {t.workload_hash for t in gpt2} - {t.workload_hash for t in bert}


@pytest.mark.parametrize("args, message", [
    (("resnet19", 1), "unknown network 'resnet19'; known:"),
    (("mlp", 0), "batch size must be >= 1"),
    (("mlp", 1, -3), "input size must be >= 1"),
])
def test_bad_network_requests(args, message):
    with pytest.raises(TenforgeError, match=message):
        build_network(*args)


def test_resnext50_is_resnet50_with_grouped_3x3_convs():
    """TenSet's held-out ResNeXt-50 (32x4d); ResNet-50 keeps its plain convs (and its tasks)."""
    def groups(name):
        model, _ = build_network(name, 1, 32)
        return sorted({m.groups for m in model.modules() if isinstance(m, torch.nn.Conv2d)})

    assert groups("resnet50") == [1]
    assert groups("resnext50") == [1, 32]
