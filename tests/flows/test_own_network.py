"""A user's own network, from a file to a deployable library: the README's three commands as
written, the library checked against PyTorch, and every bad file refused in one line with
nothing written."""

import json
import re
import shlex
import zipfile
from pathlib import Path

import pytest

from storage.store import Store
from tests.conftest import ROOT, assert_refused, run_cli, run_cli_table

# The user's code: a small network of their own, not a zoo entry.
USER_CODE = '''
import dataclasses

import torch
from torch import nn


class MyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 16 * 16, 10)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def make():
    torch.manual_seed(0)
    return MyNet().eval(), (torch.randn(1, 3, 16, 16),)


def boom():
    raise ValueError("no weights here")


def wrong():
    return torch.randn(3)


class Flags(nn.Module):  # a cumsum over booleans: TVM has no lowering for it
    def forward(self, x):
        return (x > 0).cumsum(-1).float()


def flags():
    return Flags(), (torch.randn(1, 8),)


@dataclasses.dataclass
class Out:  # an output type registered with torch by this module, as transformers does
    hidden: torch.Tensor


torch.utils._pytree.register_dataclass(Out, serialized_type_name="my_model.Out")


class WithOut(nn.Module):
    def forward(self, x):
        return Out(torch.relu(x))
'''


def _readme_commands() -> list[list[str]]:
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- tests/flows/test_own_network.py runs this block as written -->\n"
                      r"```bash\n(.*?)```", readme, re.S)
    assert block, "the README's own-network block is gone"
    lines = [line for line in block.group(1).splitlines() if line.strip()]
    assert all(line.startswith("./run ") for line in lines)
    return [shlex.split(line)[1:] for line in lines]


@pytest.fixture(scope="module")
def user_files(tmp_path_factory):
    """my_model.py (the user's code), my_model.pt2 (torch.export.save of it) and
    my_model.onnx (torch.onnx.export of it), in a folder of the user's."""
    import sys

    import torch

    folder = tmp_path_factory.mktemp("user")
    (folder / "my_model.py").write_text(USER_CODE)
    sys.path.insert(0, str(folder))
    try:
        import my_model
    finally:
        sys.path.remove(str(folder))
    model, inputs = my_model.make()
    torch.export.save(torch.export.export(model, inputs), str(folder / "my_model.pt2"))
    torch.onnx.export(model, inputs, str(folder / "my_model.onnx"), dynamo=False,
                      input_names=["x"])
    torch.export.save(torch.export.export(my_model.WithOut(), (torch.randn(2, 3),)),
                      str(folder / "with_out.pt2"))
    return folder, model, inputs


@pytest.mark.slow
def test_the_readme_path_from_my_model_to_a_deployable_library(user_files, tmp_path):
    import numpy as np
    import torch
    import tvm
    from tvm.runtime.vm import VirtualMachine

    folder, model, (x,) = user_files
    env = {"TENFORGE_DB": str(tmp_path / "store.duckdb")}
    for args in _readme_commands():
        result = run_cli(*args, "--hardware", "local-1t", env=env, cwd=folder)
        assert result.returncode == 0, (args, result.stderr[-3000:])

    with Store(env["TENFORGE_DB"], read_only=True) as store:
        (name, kind, content_hash), = store.query("SELECT name, kind, content_hash FROM "
                                                  "workloads")
        (network, trials, functions), = store.query("SELECT network, trials, tuned_functions "
                                                    "FROM tuning_runs")
    assert (name, kind, network) == ("my_model", "exported", "my_model")
    assert trials == 32 and functions >= 1
    library = folder / "my_model-tuned"
    manifest = json.loads((library / "manifest.json").read_text())
    assert manifest["source"] == "exported" and manifest["content_hash"] == content_hash
    vm = VirtualMachine(tvm.runtime.load_module(str(library / "model.so")), tvm.cpu())
    weights = tvm.runtime.load_param_dict_from_file(str(library / "params.bin"))
    got = vm["main"](tvm.runtime.tensor(x.numpy()),
                     *[weights[n] for n in manifest["weights"]["names"]])
    with torch.no_grad():
        want = model(x).numpy()
    if not hasattr(got, "numpy"):  # the VM returns a tuple of outputs
        (got,) = got
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-5)


def _write_dynamic_onnx(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph), str(path))


def _write_custom_op_onnx(path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("FancyCustomOp", ["x"], ["y"])], "g", [x], [y])
    onnx.save(helper.make_model(graph), str(path))


def _write_pickled_pt2(source: Path, path: Path) -> None:
    """A torch.export archive whose weights say they are pickled (what a tensor subclass
    weight gives): loading it would unpickle."""
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(path, "w") as out:
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("_weights_config.json"):
                config = json.loads(data)
                for meta in config["config"].values():
                    meta["use_pickle"] = True
                data = json.dumps(config).encode()
            out.writestr(info, data)


def test_bad_network_files_are_refused_in_one_line_and_write_nothing(user_files, tmp_path):
    folder, _, _ = user_files
    (tmp_path / "text.pt2").write_text("not a zip")
    _write_dynamic_onnx(tmp_path / "dynamic.onnx")
    _write_custom_op_onnx(tmp_path / "custom.onnx")
    _write_pickled_pt2(folder / "my_model.pt2", tmp_path / "pickled.pt2")
    db = str(tmp_path / "store.duckdb")
    add = ["networks", "add", "--db", db, "--name", "n"]
    cases = [  # one process: before any case runs my_model.py (it registers my_model.Out)
        ([*add, str(folder / "with_out.pt2")], "its outputs are my_model.Out, a type another"),
        ([*add, str(tmp_path / "missing.pt2")], "does not exist"),
        ([*add, str(tmp_path / "text.pt2")], "is not a program saved with torch.export.save"),
        ([*add, str(tmp_path / "custom.onnx")], "does not support operator FancyCustomOp"),
        ([*add, str(tmp_path / "dynamic.onnx")], "has dynamic input dims (x ['batch', 4])"),
        ([*add, str(tmp_path / "dynamic.onnx"), "--input-shape", "x=0x4"],
         "expected NAME=DIMS with positive dims"),
        ([*add, str(tmp_path / "pickled.pt2")], "as pickled objects"),
        ([*add, f"{folder / 'my_model.py'}:boom"], "boom() raised ValueError: no weights here"),
        ([*add, f"{folder / 'my_model.py'}:wrong"], "wrong() returned Tensor; expected"),
        ([*add, f"{folder / 'my_model.py'}:absent"], "has no 'absent'"),
        ([*add, f"{folder / 'my_model.py'}:flags"], "cannot lower operator relax.cumsum(bool)"),
        (["retune", str(tmp_path / "missing.onnx"), "--db", db], "does not exist"),
        (["retune", "my_net_nobody_registered", "--db", db], "unknown network"),
        (["compile", "my_model", "--out", str(tmp_path / "lib"), "--db", db],
         "unknown network 'my_model'"),
    ]
    for answer, (_, message) in zip(run_cli_table([args for args, _ in cases]), cases):
        assert_refused(answer, message)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "custom.onnx", "dynamic.onnx", "pickled.pt2", "text.pt2"]  # no store, no library


@pytest.mark.slow
def test_registered_names_are_unique_and_dynamic_dims_take_sizes(user_files, tmp_path):
    """One name, one file; an ONNX model with a dynamic batch is registered with a size; a file
    named directly in collect is measured and registered; the registry lists them, and their
    deployments exist per profile."""
    from tenforge.deployments import machine_deployments, machine_profiles

    folder, _, _ = user_files
    _write_dynamic_onnx(tmp_path / "dynamic.onnx")
    db = str(tmp_path / "store.duckdb")
    answers = run_cli_table([
        ["networks", "add", f"{folder / 'my_model.py'}:make", "--name", "mine", "--db", db],
        ["networks", "add", str(folder / "my_model.onnx"), "--name", "mine", "--db", db],
        ["networks", "add", str(tmp_path / "dynamic.onnx"), "--name", "dyn", "--input-shape",
         "x=2x4", "--db", db],
    ])
    assert answers[0]["code"] == 0, answers[0]
    assert_refused(answers[1], "network name 'mine' is registered to")
    assert answers[2]["code"] == 0, answers[2]
    with Store(db, read_only=True) as store:
        rows = dict(store.query("SELECT name, inputs_json FROM workloads"))
    assert json.loads(rows["dyn"]) == [{"shape": [2, 4], "dtype": "float32"}]
    assert json.loads(rows["mine"]) == [{"shape": [1, 3, 16, 16], "dtype": "float32"}]
    # a file named directly: collected, and registered under its file's name on first use
    collected = run_cli("collect", "--networks", str(folder / "my_model.onnx"), "--candidates",
                        "2", "--hardware", "local-1t", "--db", db)
    assert collected.returncode == 0, collected.stderr[-3000:]
    with Store(db, read_only=True) as store:
        kind = store.scalar("SELECT kind FROM workloads WHERE name = 'my_model'")
        measured = store.scalar("SELECT count(*) FROM measurements m JOIN candidates c USING "
                                "(candidate_id) JOIN network_tasks nt USING (task_id) JOIN "
                                "networks n USING (network_id) WHERE n.name = 'my_model'")
    assert kind == "onnx" and measured >= 2
    listed = run_cli("networks", "--db", db)
    assert listed.returncode == 0 and "resnet18" in listed.stdout
    assert re.search(r"^dyn +onnx +2x4:float32 +1 ", listed.stdout, re.M), listed.stdout
    profiles = machine_profiles(["local-1t"])
    names = {d["name"]: d for d in machine_deployments(profiles, networks=["dyn", "mine"])
             ["deployments"]}
    deployment = names[f"retune-mine-{profiles[0].name}"]
    assert deployment["parameters"]["network"] == "mine"
    assert deployment["entrypoint"] == "flows/retune.py:retune"
