"""Where a tuned network loses to PyTorch, layer by layer (issue 15: "faster than PyTorch").

A tuned network's end-to-end time is the sum of its tasks' times, each task run `weight`
times; MetaSchedule's database holds every task's best measured time (the estimate the
retune reports, within a few % of the timed network). This bench puts each convolution and
dense task beside PyTorch eager running the same layer alone, at the same thread count:

  TVM      the database's best mean run time of the task (its fused epilogue included:
           batch norm, residual add, ReLU), times its weight;
  PyTorch  the median of `--runs` calls of that layer's module alone (nn.Conv2d / nn.Linear)
           on the input it sees in the network, after warm-up, times the task's weight;
           batch norm, ReLU and adds run as separate kernels in eager and are summed apart
           in the "PyTorch other ops" line (timed the same way, module by module).

Layers are matched by their convolution's (in, out, kernel, stride, input side) or the
dense layer's (in, out). Tasks with no convolution or dense layer (pooling, the input's
layout transform) are listed as they are. GFLOP/s uses the task's FLOPs (TVM's count).

    taskset -c 0 .venv/bin/python bench/layer_gap.py --database DIR [--network resnet18]
        [--threads 1] [--runs 30] [--graph exported]

DIR is a retune's MetaSchedule database (e.g. a tuning-matrix cell's databases/NAME).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench.tuning import eager_ms  # noqa: E402
from core.tvm_env import load_tvm  # noqa: E402
from storage.ms_database import valid_run_secs  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402
from tasks.networks import build_network  # noqa: E402
from tasks.tuning.writeback import read_records  # noqa: E402
from tasks.workloads import extract_network_tasks  # noqa: E402


def best_task_seconds(database: Path, target: dict) -> dict[str, float]:
    """workload hash -> the best mean run time any record of it measured, in seconds."""
    best: dict[str, float] = {}
    for key, (_, records) in read_records(database, target).items():
        ok = [float(np.mean(secs)) for r in records if (secs := valid_run_secs(r))]
        if ok:
            best[key] = min(ok)
    return best


def layer_key_of_task(mod_json: str, target: dict, graph: str) -> tuple | None:
    """(kind, in, out, kernel, stride, input side) of a task's convolution or dense layer,
    read from its buffers; None for tasks that have neither."""
    tvm = load_tvm(target)
    func = tvm.ir.load_json(mod_json)["main"]
    text = func.script()
    signature = next(line for line in text.splitlines() if line.lstrip().startswith("def "))
    shapes = [tuple(int(d) for d in re.findall(r"\d+", dims.replace("int64", "")))
              for dims in re.findall(r'T\.Buffer\(\((.*?)\), "', signature)]
    if "conv2d" in text:
        data, weight, out = shapes[0], shapes[1], shapes[-1]
        if graph == "nhwc":  # NHWC data, OHWI weights
            _, side, _, cin = data
            cout, k = weight[0], weight[1]
            out_side = out[1]
        elif len(data) == 5:  # NCHW[x]c data, OIHW[x]i[y]o weights (nchw8c, nchw16c)
            _, chunks, side, _, block = data
            cin, cout, k, out_side = chunks * block, weight[0] * weight[5], weight[2], out[2]
            return ("conv", cin, cout, k, max(1, round(side / out_side)), side, 1)
        else:
            _, cin, side, _ = data
            cout, k = weight[0], weight[2]
            out_side = out[2]
        groups = max(1, cin // weight[-1 if graph == "nhwc" else 1])
        stride = max(1, round(side / out_side))  # (padding is inside the task)
        return ("conv", cin, cout, k, stride, side, groups)
    if re.search(r"matmul|dense", text) and len(shapes[0]) == 2:
        return ("dense", shapes[0][1], shapes[-1][1])
    return None


def layer_calls(network: str, size: int | None = None) -> list[tuple]:
    """(module, its input args) of every leaf module call of one PyTorch inference."""
    import torch

    model, inputs = build_network(network, 1, size)
    seen: list[tuple[torch.nn.Module, tuple]] = []
    hooks = [m.register_forward_hook(lambda mod, args, _out: seen.append((mod, args)))
             for m in model.modules() if not list(m.children())]
    with torch.no_grad():
        model(*inputs)
    for hook in hooks:
        hook.remove()
    return seen


def pytorch_layers(network: str, threads: int, runs: int) -> tuple[dict, float]:
    """PyTorch's median ms of one call per layer key (each distinct layer timed once); and the
    other modules' (batch norm, ReLU, pooling) summed ms per inference."""
    layers: dict[tuple, float] = {}
    other = 0.0
    for module, args in layer_calls(network):
        key = layer_key_of_module(module, args[0])
        if key in layers:
            continue  # the same layer again (resnet18 runs 64->64 3x3 four times)
        ms = eager_ms(module, args, threads, runs)  # alone, after warm-up
        if key is None:
            other += ms
        else:
            layers[key] = ms
    return layers, other


def layer_key_of_module(module, x) -> tuple | None:
    """layer_key_of_task's key for a PyTorch module called on `x` (None: not conv / dense)."""
    import torch

    if isinstance(module, torch.nn.Conv2d):
        return ("conv", module.in_channels, module.out_channels, module.kernel_size[0],
                module.stride[0], x.shape[-1], module.groups)
    if isinstance(module, torch.nn.Linear):
        return ("dense", module.in_features, module.out_features)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--database", required=True, type=Path)
    parser.add_argument("--network", default="resnet18")
    parser.add_argument("--hardware", default="local-1t")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--graph", default="exported")
    args = parser.parse_args()

    profile = resolve_profile(args.hardware)
    tasks = extract_network_tasks(args.network, 1, None, profile.target, args.graph)
    best = best_task_seconds(args.database, profile.target)
    torch_layers, torch_other = pytorch_layers(args.network, args.threads, args.runs)

    rows, tvm_total, torch_matched = [], 0.0, 0.0
    for task in tasks:
        secs = best.get(task.workload_hash)
        tvm_ms = None if secs is None else secs * 1e3 * task.weight
        key = layer_key_of_task(task.mod_json, profile.target, args.graph)
        # one PyTorch call per occurrence of the task (a layer fused two ways, with and
        # without a residual add, is two tasks sharing the layer's calls)
        torch_ms = torch_layers.get(key) if key else None
        torch_total = None if torch_ms is None else torch_ms * task.weight
        tvm_total += tvm_ms or 0.0
        torch_matched += torch_total or 0.0
        gflops = (None if secs is None else task.flops / secs / 1e9)
        rows.append((task.task_name[:48], "" if key is None else ",".join(map(str, key[1:])),
                     task.weight, tvm_ms, gflops, torch_total,
                     None if not (tvm_ms and torch_total) else torch_total / tvm_ms))
    rows.sort(key=lambda r: -(r[3] or 0))
    print(f"{args.network} ({args.graph}), {profile.name}, {args.threads} thread(s); TVM: "
          f"best measured per task in {args.database}; PyTorch: each layer alone, median of "
          f"{args.runs}")
    print(format_table(["task", "layer (in,out,k,stride,side,groups)", "x", "TVM ms",
                        "TVM GFLOP/s", "PyTorch ms", "PyTorch/TVM"],
                       [[r[0], r[1], r[2],
                         "untuned" if r[3] is None else f"{r[3]:.2f}",
                         "" if r[4] is None else f"{r[4]:.1f}",
                         "" if r[5] is None else f"{r[5]:.2f}",
                         "" if r[6] is None else f"{r[6]:.2f}x"] for r in rows]))
    print(f"TVM tasks summed: {tvm_total:.2f} ms; PyTorch's matched conv/dense layers: "
          f"{torch_matched:.2f} ms; PyTorch's other modules (batch norm, ReLU, pooling; fused "
          f"into TVM's tasks): {torch_other:.2f} ms")


if __name__ == "__main__":
    main()
