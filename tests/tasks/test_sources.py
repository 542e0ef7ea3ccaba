"""Network references (tasks/sources.py): what each string names, without loading anything."""

import pytest

from core.errors import TenforgeError
from tasks.sources import (
    EXPORTED,
    FACTORY,
    ONNX,
    ZOO,
    file_workload,
    parse_input_shapes,
    resolve_workload,
)


def test_a_zoo_name_is_the_zoo():
    workload = resolve_workload("resnet18")
    assert (workload.name, workload.kind, workload.source) == ("resnet18", ZOO, "resnet18")
    assert workload.is_zoo and workload.content_hash == ""


def test_files_are_named_by_kind_and_hashed_not_loaded(tmp_path):
    (tmp_path / "my net.pt2").write_bytes(b"anything: it is only hashed here")
    (tmp_path / "m.onnx").write_bytes(b"x")
    (tmp_path / "code.py").write_text("raise SystemExit('never run by resolving')\n")
    exported = resolve_workload(str(tmp_path / "my net.pt2"))
    assert (exported.kind, exported.name) == (EXPORTED, "my_net")
    assert len(exported.content_hash) == 64
    assert resolve_workload(str(tmp_path / "m.onnx")).kind == ONNX
    factory = resolve_workload(f"{tmp_path / 'code.py'}:make")
    assert factory.kind == FACTORY and factory.source.endswith("code.py:make")
    assert factory.path == (tmp_path / "code.py").resolve()
    assert file_workload(str(tmp_path / "m.onnx"), name="Mine").name == "Mine"


def test_the_same_content_hashes_the_same(tmp_path):
    (tmp_path / "a.onnx").write_bytes(b"same")
    (tmp_path / "b.onnx").write_bytes(b"same")
    assert (resolve_workload(str(tmp_path / "a.onnx")).content_hash
            == resolve_workload(str(tmp_path / "b.onnx")).content_hash)


@pytest.mark.parametrize("reference, message", [
    ("resnet1000", "unknown network 'resnet1000'"),
    ("nowhere/model.pt2", "network file nowhere/model.pt2 does not exist"),
    ("model.txt:make", "unknown network 'model.txt:make'"),
    ("code.py:not-an-identifier", "unknown network"),
])
def test_bad_references_say_what_would_be_right(reference, message):
    with pytest.raises(TenforgeError, match="FILE.py:FACTORY") as raised:
        resolve_workload(reference)
    assert message in str(raised.value)


def test_names_must_be_usable(tmp_path):
    (tmp_path / "m.onnx").write_bytes(b"x")
    with pytest.raises(TenforgeError, match="is not usable"):
        file_workload(str(tmp_path / "m.onnx"), name="no spaces please")
    with pytest.raises(TenforgeError, match="is a zoo network's; choose another"):
        file_workload(str(tmp_path / "m.onnx"), name="resnet18")
    (tmp_path / "resnet18.onnx").write_bytes(b"x")  # named after a zoo network: kept apart
    assert resolve_workload(str(tmp_path / "resnet18.onnx")).name == "resnet18_onnx"


def test_input_shapes_parse_and_refuse_nonsense():
    assert parse_input_shapes(["x=1x3x224x224", "mask=1X128"]) == (
        ("x", (1, 3, 224, 224)), ("mask", (1, 128)))
    assert parse_input_shapes(None) == ()
    for bad in ["x", "=1x2", "x=1xa", "x=0x4"]:
        with pytest.raises(TenforgeError, match="expected NAME=DIMS"):
            parse_input_shapes([bad])
