"""Networks nobody at tenforge wrote, through the user's path: register, collect, retune, compile.

Hugging Face `transformers` models built from a config (random weights, nothing downloaded):
GPT-2 (2 layers, hidden 256, 32 tokens and their attention mask) saved with torch.export.save
as a `.pt2`, and ViT (2 layers, hidden 192, 64x64 image) as a `.py` factory and as an ONNX file
exported from PyTorch (torch.onnx.export). Two GPT-2 exports TVM cannot take are refused first,
each in one line. Each goes through the CLI as a user would (`networks add`,
`collect`, `retune`, `compile`), then the compiled library is loaded with the TVM runtime and
compared with PyTorch on the same inputs, and timed beside PyTorch eager at the same threads.

    pip install -e '.[bench]'     # transformers
    .venv/bin/python bench/own_models.py [--hardware local] [--trials 64] [--candidates 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tenforge.cli import bootstrap  # noqa: E402

bootstrap()

from bench._data import scratch_dir  # noqa: E402
from bench.tuning import eager_ms  # noqa: E402
from storage.reports import format_table  # noqa: E402
from tasks.hardware import resolve_profile  # noqa: E402

FACTORIES = '''
"""The user's code: Hugging Face models from a config, random weights."""
import torch


def gpt2_bare():
    from transformers import GPT2Config, GPT2Model

    torch.manual_seed(0)
    config = GPT2Config(n_layer=2, n_head=4, n_embd=256, n_positions=64, vocab_size=1000,
                        bos_token_id=0, eos_token_id=0, use_cache=False)
    config.return_dict = False  # tuple outputs: a ModelOutput .pt2 needs transformers to load
    return GPT2Model(config).eval(), (torch.randint(0, 1000, (1, 32)),)


class GPT2Inference(torch.nn.Module):
    """Token ids and attention mask in, hidden states out: how a deployed GPT-2 is called
    (without a mask, transformers checks position ids for packed sequences with a cumsum
    over booleans, which TVM cannot lower)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, attention_mask):
        return self.model(input_ids=input_ids, attention_mask=attention_mask)[0]


def gpt2():
    model, (ids,) = gpt2_bare()
    return GPT2Inference(model).eval(), (ids, torch.ones_like(ids))


def vit():
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(hidden_size=192, num_hidden_layers=2, num_attention_heads=3,
                       intermediate_size=768, image_size=64, patch_size=16)
    return ViTModel(config, add_pooling_layer=False).eval(), (torch.randn(1, 3, 64, 64),)
'''


def first_tensor(output):
    """The first tensor of a model's output (a tensor, a tuple, or a transformers output)."""
    import torch

    if isinstance(output, torch.Tensor):
        return output
    if hasattr(output, "to_tuple"):
        output = output.to_tuple()
    return first_tensor(output[0])


def cli(*args: str, env: dict[str, str], cwd: Path) -> tuple[str, float]:
    """`tenforge ARGS` as a user runs it; (its output, wall seconds). Exits on a failure."""
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "tenforge.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"tenforge {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout + done.stderr, time.monotonic() - start


def library_output(folder: Path, inputs) -> tuple[np.ndarray, dict]:
    import tvm
    from tvm.runtime.vm import VirtualMachine

    manifest = json.loads((folder / "manifest.json").read_text())
    vm = VirtualMachine(tvm.runtime.load_module(str(folder / "model.so")), tvm.cpu())
    weights = tvm.runtime.load_param_dict_from_file(str(folder / "params.bin"))
    out = vm["main"](*[tvm.runtime.tensor(x.numpy()) for x in inputs],
                     *[weights[n] for n in manifest["weights"]["names"]])
    while not hasattr(out, "numpy"):
        out = out[0]
    return out.numpy(), manifest


def main() -> None:
    import os

    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hardware", default="local")
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--candidates", type=int, default=4, help="collect: per task")
    args = parser.parse_args()
    try:
        import transformers
    except ImportError:
        sys.exit("bench/own_models.py needs transformers: pip install -e '.[bench]'")
    profile = resolve_profile(args.hardware)
    work = scratch_dir("own-models")
    (work / "hf_models.py").write_text(FACTORIES)
    sys.path.insert(0, str(work))
    import hf_models

    gpt2, gpt2_inputs = hf_models.gpt2()
    vit, vit_inputs = hf_models.vit()
    torch.export.save(torch.export.export(gpt2, gpt2_inputs), str(work / "gpt2.pt2"))
    torch.onnx.export(vit, vit_inputs, str(work / "vit.onnx"), dynamo=False,
                      input_names=["pixel_values"])
    env = {**os.environ, "TENFORGE_DB": str(work / "store.duckdb")}
    # Two GPT-2 exports TVM cannot take, refused in one line by name: outputs of a type
    # transformers registers with torch (ModelOutput), and a cumsum over booleans.
    bare, (ids,) = hf_models.gpt2_bare()
    bare.config.return_dict = True
    torch.export.save(torch.export.export(bare, (ids,)), str(work / "gpt2_dict.pt2"))
    bare.config.return_dict = False
    torch.export.save(torch.export.export(bare, (ids,)), str(work / "gpt2_nomask.pt2"))
    for refused_file in ("gpt2_dict.pt2", "gpt2_nomask.pt2"):
        refused = subprocess.run([sys.executable, "-m", "tenforge.cli", "networks", "add",
                                  refused_file, "--name", "refused"], cwd=work, env=env,
                                 capture_output=True, text=True)
        print(f"{refused_file} (exit {refused.returncode}): "
              f"{refused.stderr.strip().splitlines()[-1]}")
    cases = [("gpt2_pt2", "gpt2.pt2", gpt2, gpt2_inputs),
             ("vit_factory", "hf_models.py:vit", vit, vit_inputs),
             ("vit_onnx", "vit.onnx", vit, vit_inputs)]
    print(f"transformers {transformers.__version__}, profile {profile.name} "
          f"({profile.num_threads} threads), {args.trials} trials per retune, work in {work}")
    rows = []
    for name, reference, model, inputs in cases:
        hw = ["--hardware", args.hardware]
        said, add_s = cli("networks", "add", reference, "--name", name, *hw, env=env, cwd=work)
        print(said.strip().splitlines()[-1])
        _, collect_s = cli("collect", "--networks", name, "--candidates",
                           str(args.candidates), *hw, env=env, cwd=work)
        said, retune_s = cli("retune", name, "--trials", str(args.trials), "--cost-model",
                             "metaschedule-xgb", *hw, env=env, cwd=work)
        print([line for line in said.splitlines() if "retune done" in line][-1][-260:])
        _, compile_s = cli("compile", name, "--out", str(work / f"{name}-tuned"), *hw,
                           env=env, cwd=work)
        got, manifest = library_output(work / f"{name}-tuned", inputs)
        with torch.no_grad():
            want = first_tensor(model(*inputs)).numpy()
        error = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-12))
        torch_ms = eager_ms(model, inputs, profile.num_threads, runs=30)
        rows.append((name, reference, manifest["scheduled_functions"],
                     f"{add_s + collect_s:.0f}", f"{retune_s:.0f}", f"{compile_s:.0f}",
                     f"{error:.1e}", manifest["tuned_latency_ms"],
                     manifest["latency_here_ms"], round(torch_ms, 3),
                     f"{torch_ms / manifest['latency_here_ms']:.2f}x"))
    print(format_table(["network", "file", "tuned fns", "add+collect s", "retune s",
                        "compile s", "max rel err", "tuned ms", "library ms", "torch ms",
                        "vs torch"], rows))
    print("max rel err: the compiled library's first output against PyTorch's on the same "
          "inputs; library ms: the exported library timed here (median, warm); torch ms: "
          "PyTorch eager, same threads (median of 30)")


if __name__ == "__main__":
    main()
