"""Graph preparations (core.graphs.GRAPHS): every one computes what PyTorch computes, and
"folded" / "nhwc" leave no weight-only work in `main` (it runs once, on the weights)."""

import shutil

import numpy as np
import pytest

from core.errors import TenforgeError
from core.graphs import FAST_MATH_GRAPHS, GRAPHS, MIXED_PRECISION
from tasks.sources import resolve_workload
from tasks.workloads import exact_math, import_with_weights, split_into_tasks
from tests.conftest import LOCAL_TARGET
from tests.tasks.graph_helpers import run_untuned, user_network

# Conv + batch norm + residual + linear: batch norm's sqrt(var + eps) and the linear layer's
# weight transpose depend on the weights alone.
USER_CODE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 5)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = torch.relu(self.bn2(self.conv2(y)) + y)
        return self.fc(y.mean((2, 3)))


def make():
    torch.manual_seed(0)
    net = Net().eval()
    for bn in (net.bn1, net.bn2):  # not the identity a fresh batch norm is
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return net, (torch.randn(1, 3, 12, 12),)
'''


# MobileNet-V2's inverted residual: 1x1 expand, ReLU6, 3x3 depthwise (stride 1 and 2), ReLU6,
# 1x1 project. 32 channels: blocked by 8 and by 16, depthwise too; 40 only by 8.
DEPTHWISE_CODE = '''
import torch
from torch import nn


def block(channels, stride):
    return nn.Sequential(
        nn.Conv2d(16, channels, 1, bias=False), nn.BatchNorm2d(channels), nn.ReLU6(),
        nn.Conv2d(channels, channels, 3, stride, 1, groups=channels, bias=False),
        nn.BatchNorm2d(channels), nn.ReLU6(), nn.Conv2d(channels, 16, 1, bias=False))


def make():
    torch.manual_seed(0)
    net = nn.Sequential(block(32, 1), block(40, 2)).eval()
    for bn in (m for m in net.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    return net, (torch.randn(1, 16, 10, 10),)
'''


# The batch norms a convolution's output meets: after a conv with a bias, after a
# depthwise one, without affine parameters, after another norm (not foldable: it stays), and
# after a convolution whose output a residual reads too.
BATCH_NORM_CODE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, 2, 1)
        self.bn_stem = nn.BatchNorm2d(16)
        self.dw = nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False)
        self.bn_dw = nn.BatchNorm2d(16, affine=False)
        self.project = nn.Conv2d(16, 16, 1, bias=False)
        self.bn_project = nn.BatchNorm2d(16)
        self.bn_again = nn.BatchNorm2d(16)
        self.shared = nn.Conv2d(16, 16, 1)
        self.bn_shared = nn.BatchNorm2d(16)

    def forward(self, x):
        x = torch.relu(self.bn_stem(self.stem(x)))
        x = torch.relu(self.bn_dw(self.dw(x)))
        x = self.bn_again(self.bn_project(self.project(x)))
        y = self.shared(x)
        return torch.relu(self.bn_shared(y)) + y


def make():
    torch.manual_seed(0)
    net = Net().eval()
    for bn in (m for m in net.modules() if isinstance(m, nn.BatchNorm2d)):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
        if bn.affine:
            bn.weight.data.uniform_(0.5, 2)
            bn.bias.data.uniform_(-1, 1)
    return net, (torch.randn(1, 3, 16, 16),)
'''


# ConvNeXt in small: blocks of 7x7 depthwise and a channels-last layer norm (permute, norm,
# linear, permute back) with a residual, a channels-first norm before the downsampling
# convolution, and a norm of the spatial mean at the head. 32 and 64 channels: blocked by 8
# and by 16.
LAYER_NORM_CODE = '''
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, 7, 1, 3, groups=dim)
        self.norm = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        y = self.norm(self.dwconv(x).permute(0, 2, 3, 1))
        return x + self.mlp(y).permute(0, 3, 1, 2)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 32, 2, 2)
        self.block1 = Block(32)
        self.down_norm = nn.LayerNorm(32)
        self.down = nn.Conv2d(32, 64, 2, 2)
        self.block2 = Block(64)
        self.norm = nn.LayerNorm(64)

    def forward(self, x):
        x = self.block1(self.stem(x))
        x = self.down_norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        return self.norm(self.block2(self.down(x)).mean((2, 3)))


def make():
    torch.manual_seed(0)
    net = Net().eval()
    for norm in (m for m in net.modules() if isinstance(m, nn.LayerNorm)):
        norm.weight.data.uniform_(0.5, 2)  # not the identity a fresh norm is
        norm.bias.data.uniform_(-1, 1)
    return net, (torch.randn(1, 3, 16, 16),)
'''


# An H100/H200 as TVM's CUDA target (its tag's attributes): sampling and building need no GPU
SM90 = {"kind": "cuda", "arch": "sm_90a", "max_num_threads": 1024, "thread_warp_size": 32,
        "max_shared_memory_per_block": 49152, "max_threads_per_block": 1024,
        "registers_per_block": 65536}


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    path = tmp_path_factory.mktemp("graphs") / "net.py"
    path.write_text(USER_CODE)
    return resolve_workload(f"{path}:make")


def test_every_graph_computes_what_pytorch_computes(workload):
    import torch

    from tasks.user_models import factory_module

    model, (x,) = factory_module(workload)
    with torch.no_grad():
        want = model(x).numpy()
    for graph in GRAPHS:
        fused, weights, _ = import_with_weights(workload, 1, None, graph)
        got = run_untuned(fused, weights, x.numpy())
        # float16 keeps ~3 significant digits
        tolerance = 2e-2 if graph == MIXED_PRECISION else 1e-4
        np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance / 10, err_msg=graph)


def test_folding_moves_weight_only_work_out_of_the_tasks(workload):
    tasks = {graph: split_into_tasks(import_with_weights(workload, 1, None, graph)[0],
                                     LOCAL_TARGET) for graph in GRAPHS}
    names = {graph: [t.task_name for t in found] for graph, found in tasks.items()}
    # exported: the linear weight's transpose is a task of its own, run every inference
    assert any(n == "transpose" or n.startswith("transpose") for n in names["exported"])
    assert not any(n.startswith("transpose") for n in names["folded"]), names
    # (nhwc and nchw8c transform their input activation, not a weight)
    for graph in ("folded", "nhwc", "nchw8c"):
        assert not any("expand_dims" in n for n in names[graph]), names
        # the residual add and relu fuse into the convolution that feeds them
        assert any(n.startswith("fused_conv2d") and "relu" in n for n in names[graph]), names
        assert len(tasks[graph]) < len(tasks["exported"])
    # weights keep their count; nhwc's convolution weights arrive in OHWI
    exported_w = import_with_weights(workload, 1, None, "exported")[1]
    nhwc_w = import_with_weights(workload, 1, None, "nhwc")[1]
    assert len(nhwc_w) <= len(exported_w)
    assert (8, 3, 3, 3) in [w.shape for w in nhwc_w]  # conv1: OIHW (8,3,3,3) -> OHWI (8,3,3,3)
    assert (8, 3, 3, 8) in [w.shape for w in nhwc_w]  # conv2: OIHW (8,8,3,3) -> OHWI
    # nchw8c blocks the convolution whose channels 8 divides, and keeps the RGB one NCHW;
    # 8 channels do not fill nchw16c's block, so there every convolution stays NCHW
    assert any(n.startswith("fused_conv2d_NCHWc") for n in names["nchw8c"]), names
    assert not any("NCHWc" in n for n in names["nchw16c"]), names
    blocked_w = [w.shape for w in import_with_weights(workload, 1, None, "nchw8c")[1]]
    assert (1, 1, 3, 3, 8, 8) in blocked_w and (8, 3, 3, 3) in blocked_w, blocked_w


def test_an_unknown_graph_is_refused_in_one_line(workload):
    with pytest.raises(TenforgeError, match="unknown graph preparation 'nchwc'; choose one of "
                                            "exported, folded, nhwc, nchw8c, nchw16c, "
                                            "packed8, packed16, fp16"):
        import_with_weights(workload, 1, None, "nchwc")


def test_blocked_is_one_vector_of_the_profiles_floats_and_is_resolved_before_anything_runs(
        workload, db):
    from core.graphs import resolve_graph
    from tasks.collect import validate_collect
    from tasks.hardware import resolve_profile

    assert resolve_graph("blocked", "llvm", 64) == "nchw16c"  # AVX-512
    assert resolve_graph("blocked", "llvm", 32) == "nchw8c"  # AVX2
    assert resolve_graph("blocked", "llvm", 16) == "nchw8c"  # SSE4.2: no narrower layout
    assert resolve_graph("nhwc", "cuda", 0) == "nhwc"
    with pytest.raises(TenforgeError, match="blocks channels by a CPU's vector width"):
        resolve_graph("blocked", "cuda", 0)
    assert resolve_graph("fp16", "cuda", 0) == "fp16"
    with pytest.raises(TenforgeError, match="--graph fp16 runs convolutions and matmuls on GPU "
                                            "tensor cores; this profile is a CPU"):
        resolve_graph("fp16", "llvm", 64)
    with pytest.raises(TenforgeError, match="unknown graph preparation 'blocks'"):
        resolve_graph("blocks", "llvm", 64)
    # what is asked for is never what is prepared: collect and retune resolve it first
    with pytest.raises(TenforgeError, match="choose one of exported, folded, nhwc, nchw8c, "
                                            "nchw16c, packed8, packed16, fp16$"):
        import_with_weights(workload, 1, None, "blocked")
    spec = validate_collect(db, "local-1t", ["matmul"], 4, graph="blocked")
    wide = resolve_profile("local-1t").features["vector_unit_bytes"] >= 64
    assert spec.graph == ("nchw16c" if wide else "nchw8c")


def test_retune_blocks_channels_on_a_cpu_unless_told_otherwise(db):
    """The default graph: blocked on a CPU (1.3x faster tuned than exported on resnet18 and
    mobilenet_v2), exported on a GPU, where blocking by a CPU vector means nothing."""
    from core.graphs import default_graph
    from tasks.hardware import resolve_profile
    from tasks.retune import validate_retune

    assert default_graph("llvm") == "blocked" and default_graph("cuda") == "exported"
    wide = resolve_profile("local-1t").features["vector_unit_bytes"] >= 64

    def graph(**asked):
        return validate_retune(db, "tiny_cnn", "local-1t", 8, None, "metaschedule-xgb",
                               "gradient", 1.0, 1, 0, **asked).graph

    assert graph() == ("nchw16c" if wide else "nchw8c")
    assert graph(graph="exported") == "exported"
    with pytest.raises(TenforgeError, match="unknown graph preparation 'nchwc'"):
        graph(graph="nchwc")


def test_a_prepared_graph_is_stored_as_its_own_network_of_the_same_family():
    from core.graphs import stored_network_name
    from models.dataset import network_family

    assert stored_network_name("resnet18", "exported") == "resnet18"
    assert stored_network_name("resnet18", "nhwc") == "resnet18+nhwc"
    # held out with resnet18 (models.splits by_network): one family, whatever the graph
    assert network_family("resnet18+nhwc@224:1") == network_family("resnet18@160:4") == "resnet18"


def test_collect_stores_a_prepared_graphs_tasks_under_its_own_name(workload, db):
    """`collect --graph nhwc` gathers data for models that tune NHWC graphs: its tasks (NHWC
    convolutions, no weight-only work) are a network NAME+nhwc beside the exported one."""
    from storage.store import Store
    from tasks.collect import register_network, sample_task, validate_collect
    from tasks.hardware import resolve_profile

    profile = resolve_profile("local-1t")
    exported = register_network(db, profile, workload, 1)
    nhwc = register_network(db, profile, workload, 1, graph="nhwc")
    own = set(nhwc) - set(exported)  # its convolutions; tasks both share are stored once
    assert own
    assert sample_task(db, profile, min(own), 3, seed=0)["new"] > 0
    with Store(db, read_only=True) as store:
        names = {n for (n,) in store.query("SELECT name FROM networks")}
        modules = store.task_modules(nhwc)
    assert names == {workload.name, f"{workload.name}+nhwc"}
    import tvm

    scripts = [tvm.ir.load_json(modules[task_id]).script() for task_id in own]
    shape = "(T.int64({}), T.int64({}), T.int64({}), T.int64({}))".format
    # conv2 in NHWC: activations (1, 12, 12, 8), weights OHWI (8, 3, 3, 8)
    assert any(shape(1, 12, 12, 8) in text and shape(8, 3, 3, 8) in text for text in scripts)
    with pytest.raises(TenforgeError, match="unknown graph preparation 'nchwc'"):
        validate_collect(db, "local-1t", ["matmul"], 4, graph="nchwc")


WIDE_CODE = USER_CODE.replace("nn.Conv2d(3, 8,", "nn.Conv2d(3, 16,").replace(
    "nn.Conv2d(8, 8,", "nn.Conv2d(16, 16,").replace("BatchNorm2d(8)", "BatchNorm2d(16)").replace(
    "nn.Linear(8, 5)", "nn.Linear(16, 5)")


def test_nchw16c_blocks_sixteen_channels_and_computes_what_pytorch_computes(tmp_path):
    """AVX-512's block: the 16-channel convolution becomes conv2d_NCHWc (whatever CPU runs the
    test: the layout is plain TIR), and the network's output is PyTorch's."""
    wide, x, want = user_network(tmp_path, "wide", WIDE_CODE)
    fused, weights, _ = import_with_weights(wide, 1, None, "nchw16c")
    names = [t.task_name for t in split_into_tasks(fused, LOCAL_TARGET)]
    assert any(n.startswith("fused_conv2d_NCHWc") for n in names), names
    assert (1, 1, 3, 3, 16, 16) in [w.shape for w in weights]
    np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=1e-4,
                               atol=1e-5)


@pytest.mark.xdist_group("sm90")  # one worker pays the CUDA intrinsics' import (~2 s)
def test_fp16_gives_tensor_core_candidates_on_an_sm90_gpu(workload):
    """Sampling needs no GPU: the design space of an H100 tensorizes the mixed-precision
    convolutions and matmul with wmma (MetaSchedule's cuda-tensorcore rules, sm_80+); the
    plain cuda rules span the same task's SIMT space."""
    from tasks.sampling import SIMT_RULES, sample_candidates, uses_tensor_cores

    gpu = SM90
    tasks = split_into_tasks(import_with_weights(workload, 1, None, "fp16")[0], gpu)
    conv = next(t for t in tasks if t.task_name.startswith("fused_conv2d1"))
    assert "float16" in conv.mod_json
    found, _ = sample_candidates(conv.mod_json, gpu, 4, seed=0)
    assert found and all(uses_tensor_cores(c.trace_json) for c in found)
    # the same task's SIMT space (`collect --simt`): no tensor-core instruction in any sample
    simt, _ = sample_candidates(conv.mod_json, gpu, 4, seed=0, rules=SIMT_RULES)
    assert len(simt) == 4 and not any(uses_tensor_cores(c.trace_json) for c in simt)
    assert not {c.schedule_hash for c in simt} & {c.schedule_hash for c in found}
    exported = split_into_tasks(import_with_weights(workload, 1, None, "exported")[0], gpu)
    conv32 = next(t for t in exported if t.task_name.startswith("fused_conv2d1"))
    assert not any(uses_tensor_cores(c.trace_json) for c in sample_candidates(conv32.mod_json,
                                                                               gpu, 4, seed=0)[0])


@pytest.mark.slow
def test_collect_prepares_the_resolved_graph_and_its_shard_says_how(db, tmp_path):
    """`collect --graph blocked` once passed "blocked" itself on to the import (found on a lent
    machine: the run failed before measuring); the shard's command must name the graph, since
    the prepared network's tasks are other functions."""
    import json

    import duckdb

    from tasks.hardware import resolve_profile
    from tests.conftest import run_cli

    result = run_cli("collect", "--hardware", "local-1t", "--networks", "matmul", "--candidates",
                     "1", "--graph", "blocked", "--input-size", "32", "--db", db,
                     ephemeral=True)
    assert result.returncode == 0, result.stderr[-2000:]
    graph = "nchw16c" if resolve_profile("local-1t").features["vector_unit_bytes"] >= 64 \
        else "nchw8c"
    with duckdb.connect(db, read_only=True) as con:
        assert con.execute("SELECT name FROM networks").fetchall() == [(f"matmul+{graph}",)]
    out = tmp_path / "shards"
    exported = run_cli("dataset", "export-seed", "--db", db, "--out", str(out))
    assert exported.returncode == 0, exported.stderr[-2000:]
    manifest = json.loads(next(out.rglob("*.json")).read_text())
    assert manifest["command"].endswith(f"--input-size 32 --graph {graph} --db store.duckdb")


@pytest.mark.slow
@pytest.mark.xdist_group("sm90")  # one worker pays the CUDA intrinsics' import (~2 s)
@pytest.mark.skipif(shutil.which("nvcc") is None,
                    reason="building CUDA kernels needs nvcc (running them needs no GPU here)")
def test_fp16_tensor_core_candidates_build_for_sm90(workload):
    """TVM 0.27 built 24 of 200 wmma candidates on an H200 when the sums were float32 cast back
    to float16 (tasks/workloads.py); with float16 sums every one builds. Built, not run: this
    machine has no GPU."""
    from core.tvm_env import load_tvm
    from tasks.sampling import apply_trace, sample_candidates, uses_tensor_cores

    gpu = SM90
    tvm = load_tvm(gpu)
    tasks = split_into_tasks(import_with_weights(workload, 1, None, "fp16")[0], gpu)
    heavy = [t for t in tasks if t.task_name.startswith(("fused_conv2d", "fused_matmul"))]
    built = 0
    for task in heavy:
        for candidate in sample_candidates(task.mod_json, gpu, 2, seed=0)[0]:
            assert uses_tensor_cores(candidate.trace_json)
            scheduled = apply_trace(task.mod_json, candidate.trace_json, "cuda")
            tvm.compile(getattr(scheduled, "mod", scheduled), target=tvm.target.Target(gpu))
            built += 1
    assert built >= 4


def test_depthwise_convolutions_and_relu6_stay_blocked_and_compute_the_same(tmp_path):
    """ConvertLayout alone left each depthwise convolution NCHW and moved every ReLU6 back to
    NCHW (relax.clip has no layout rule): layout transforms around both, and clips that no
    longer fused. Now the 32-channel block is blocked through and through, the 40-channel one
    (not a multiple of 16) only in nchw8c, and every graph computes what PyTorch does."""
    workload, x, want = user_network(tmp_path, "inverted", DEPTHWISE_CODE)
    names = {}
    for graph in ("exported", "nchw8c", "nchw16c"):
        fused, weights, _ = import_with_weights(workload, 1, None, graph)
        np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=1e-4,
                                   atol=1e-5, err_msg=graph)
        names[graph] = [t.task_name for t in split_into_tasks(fused, LOCAL_TARGET)]
    assert not any("clip" in n for n in names["nchw8c"] + names["nchw16c"]), names
    depthwise8 = [n for n in names["nchw8c"] if n.startswith("fused_depthwise_conv2d_NCHWc")]
    assert len(depthwise8) == 2 and all(n.endswith("maximum_minimum") or "maximum" in n
                                        for n in depthwise8), names["nchw8c"]
    assert sum(n.startswith("fused_depthwise_conv2d_NCHWc") for n in names["nchw16c"]) == 1
    # 16 -> 32 -> 16 channels in nchw16c: no layout transform inside the first block
    assert sum("layout_transform" in n for n in names["nchw8c"]) <= 2, names["nchw8c"]


def test_a_layer_norm_of_a_blocked_spatial_mean_imports_and_computes_the_same(
        tmp_path):
    """ConvertLayout carried the blocked layout through the head's spatial mean into
    layer_norm, whose rule then normalized over the outer channel axis: ConvNeXt failed to
    import in nchw8c and nchw16c (the default graph on every x86 CPU). Now that mean reduces
    the unblocked tensor, and the network computes what PyTorch does."""
    workload, x, want = user_network(tmp_path, "convnext_small", LAYER_NORM_CODE)
    for graph in ("nchw8c", "nchw16c"):
        fused, weights, _ = import_with_weights(workload, 1, None, graph)
        names = [t.task_name for t in split_into_tasks(fused, LOCAL_TARGET)]
        assert any(n.startswith("fused_depthwise_conv2d_NCHWc") for n in names), names
        np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=1e-4,
                                   atol=1e-5, err_msg=graph)


def test_a_prepared_graph_folds_batch_norms_into_the_convolutions_before_them(tmp_path):
    """Every prepared graph computes what PyTorch computes with its batch norms folded into
    the convolutions' weights: a convolution's epilogue keeps no divide, except where the
    norm follows another norm (not a convolution), which stays as it was."""
    workload, x, want = user_network(tmp_path, "batch_norms", BATCH_NORM_CODE)
    for graph in GRAPHS:
        fused, weights, _ = import_with_weights(workload, 1, None, graph)
        tolerance = 2e-2 if graph == MIXED_PRECISION else 1e-4
        np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=tolerance,
                                   atol=tolerance / 10, err_msg=graph)
        names = [t.task_name for t in split_into_tasks(fused, LOCAL_TARGET)]
        divides = [n for n in names if "divide" in n]
        if graph == "exported":  # as torch.export gives it: every norm decomposed
            assert len(divides) >= 4, names
        else:  # bn_again alone, fused into the projection's task
            assert len(divides) == 1, (graph, names)


@pytest.mark.xdist_group("sm90")  # one worker pays the CUDA intrinsics' import (~2 s)
def test_collect_simt_samples_each_tensorizable_task_without_tensor_cores_too(workload, db):
    """`collect --simt`: a tensor-core task gets as many SIMT candidates as wmma ones, a task
    no tensor core runs is not sampled again (its samples are SIMT already; sampling it again
    spent 1,024 tries on each small task of a lent H200), and a re-run samples nothing new.
    Sampling needs no GPU."""
    from core.hardware import HardwareProfile
    from storage.store import Store
    from tasks.collect import register_network, sample_task
    from tasks.sampling import uses_tensor_cores

    profile = HardwareProfile(name="gpu-sm90-test", target=SM90)
    ids = register_network(db, profile, workload, 1, None, "fp16")
    for task_id in ids:
        sample_task(db, profile, task_id, 1, seed=0)
        sample_task(db, profile, task_id, 1, seed=0, simt=True)
    again = [sample_task(db, profile, i, 1, seed=0, simt=True) for i in ids]
    assert again == [{"new": 0, "invalid": 0}] * len(ids)
    with Store(db, read_only=True) as store:
        hardware_id = store.hardware_id(profile.name)
        kinds = {i: [uses_tensor_cores(t) for _, t in store.candidate_traces(i, hardware_id)]
                 for i in ids}
    tensorized = [i for i in ids if any(kinds[i])]
    assert tensorized and len(tensorized) < len(ids), kinds  # the convolutions and the matmul
    for task_id, uses in kinds.items():
        assert uses == ([True, False] if task_id in tensorized else [False]), kinds
    # more SIMT samples asked of a task without tensor cores: it has no SIMT space of its own
    assert [sample_task(db, profile, i, 3, seed=0, simt=True) for i in ids if i not in tensorized
            ] == [{"new": 0, "invalid": 0}] * (len(ids) - len(tensorized))


def test_collect_refuses_simt_on_a_cpu(db):
    from core.errors import TenforgeError
    from tasks.collect import validate_collect

    with pytest.raises(TenforgeError, match="--simt .* leave --simt out"):
        validate_collect(db, "local-1t", ["matmul"], 2, simt=True)


def test_a_simt_collect_shard_names_the_option_in_its_command():
    from storage.seed_export import _command_of

    params = {"hardware": "gpu-h200", "networks": ["vit"], "candidates_per_task": 16,
              "seed": 0, "batch_size": 1, "graph": "fp16"}
    assert not _command_of("collect", params, "s.duckdb").count("--simt")
    assert _command_of("collect", {**params, "simt": True}, "s.duckdb").endswith(
        "--graph fp16 --simt --db s.duckdb")


# Every operator tasks/fast_math.py approximates: attention's softmax, GELU (erf and tanh
# forms), sigmoid, SiLU, exp, tanh and erf, with inputs spread wide enough (x 4) to reach
# the approximations' clamps.
FAST_MATH_CODE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(32, 96)
        self.up = nn.Linear(32, 64)
        self.down = nn.Linear(64, 32)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        y = torch.softmax(q @ k.transpose(-1, -2) / 4, dim=-1) @ v
        h = self.up(y)
        h = nn.functional.gelu(h) + nn.functional.gelu(h, approximate="tanh")
        h = h * torch.sigmoid(h) + nn.functional.silu(h) + torch.tanh(h) + torch.erf(h)
        return self.down(h) + torch.exp(-y * y)


def make():
    torch.manual_seed(0)
    return Net().eval(), (4 * torch.randn(1, 16, 32),)
'''


def test_prepared_graphs_compute_exp_erf_and_tanh_by_fast_approximations(tmp_path):
    """Exported, exp / erf / tanh are calls of the C library's scalar function an element
    (tir.exp, tir.erf, tir.tanh, tir.sigmoid in the TIR); the float32 prepared graphs compute
    them with TOPI's polynomials, keep the functions' names, and compute what PyTorch does."""
    import tvm

    workload, x, want = user_network(tmp_path, "attention", FAST_MATH_CODE)
    library_calls = ("T.exp(", "T.erf(", "T.tanh(", "T.sigmoid(")
    for graph in ("exported", *FAST_MATH_GRAPHS):
        fused, weights, _ = import_with_weights(workload, 1, None, graph)
        tasks = split_into_tasks(fused, LOCAL_TARGET)
        scripts = [tvm.ir.load_json(t.mod_json).script() for t in tasks]
        calls = {n for script in scripts for n in library_calls if n in script}
        names = " ".join(t.task_name for t in tasks)
        assert "softmax" in names and "gelu" in names, names
        if graph == "exported":
            assert calls == set(library_calls), calls
        else:
            assert not calls, (graph, calls)
        np.testing.assert_allclose(run_untuned(fused, weights, x), want, rtol=1e-4,
                                   atol=1e-4, err_msg=graph)
    with exact_math():  # what bench/graph_levers.py's nchw16c:exact compares with
        fused, _, _ = import_with_weights(workload, 1, None, "nchw16c")
    exact = " ".join(tvm.ir.load_json(t.mod_json).script()
                     for t in split_into_tasks(fused, LOCAL_TARGET))
    assert all(call in exact for call in library_calls)
