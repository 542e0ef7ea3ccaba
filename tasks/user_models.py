"""Users' networks into Relax: their own factory code, a torch.export program, an ONNX model.

Files are data. A `.pt2` is read without unpickling anything: torch.export.load would unpickle
its sample inputs (with a fallback to full pickle) and any tensor subclass or custom object,
so tenforge checks the archive's manifests, blanks the sample inputs in a private copy and
loads that with every unpickler disabled. An ONNX file is protobuf. Only a `.py` factory runs
code, and the user names it explicitly (FILE.py:FACTORY).
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any, Iterator

from core.errors import TenforgeError
from tasks.sources import EXPORTED, FACTORY, ONNX, Workload


def factory_module(workload: Workload) -> tuple[Any, tuple[Any, ...]]:
    """Run the user's factory: (an eval-mode torch module, its example inputs)."""
    import importlib.util

    import torch

    path, name = workload.source.rsplit(":", 1)
    spec = importlib.util.spec_from_file_location(f"tenforge_user_{Path(path).stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
        factory = getattr(module, name)
    except AttributeError:
        raise TenforgeError(f"{path} has no {name!r}; name a function that returns "
                            "(module, example_inputs)") from None
    except Exception as exc:  # noqa: BLE001 - the user's code: say what it raised, in one line
        raise TenforgeError(f"importing {path} failed: {type(exc).__name__}: {exc}") from None
    try:
        made = factory()
    except Exception as exc:  # noqa: BLE001
        raise TenforgeError(f"{workload.source}() raised {type(exc).__name__}: {exc}") from None
    model, inputs = made if isinstance(made, tuple) and len(made) == 2 else (None, None)
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if (not isinstance(model, torch.nn.Module) or not isinstance(inputs, (tuple, list))
            or not inputs or not all(isinstance(x, torch.Tensor) for x in inputs)):
        raise TenforgeError(f"{workload.source}() returned {type(made).__name__}; expected "
                            "(torch.nn.Module, example_inputs), the inputs a tensor or a tuple "
                            "of tensors")
    return model.eval(), tuple(inputs)


# ----------------------------------------------------------------------------- .pt2


@contextlib.contextmanager
def _no_unpickling(path: Path) -> Iterator[None]:
    """Every unpickler torch.export.load could reach raises instead (restored afterwards)."""
    import torch

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise TenforgeError(f"{path} holds pickled objects; tenforge loads .pt2 files as data "
                            "only: export a model without tensor subclasses or custom objects")

    # The pickle module torch already imported, taken from sys.modules only to switch it off
    # (tenforge itself never imports it: tests/test_untrusted_input.py).
    pickle_module = sys.modules["pickle"]
    saved = [(torch, "load"), (pickle_module, "load"), (pickle_module, "loads"),
             (torch._C, "_pickle_load_obj")]
    originals = [getattr(owner, attr) for owner, attr in saved]
    for owner, attr in saved:
        setattr(owner, attr, refuse)
    try:
        yield
    finally:
        for (owner, attr), original in zip(saved, originals):
            setattr(owner, attr, original)


def _pickle_free_copy(path: Path, folder: str) -> Path:
    """A copy of a torch.export archive with its (pickled) sample inputs blanked; refuses one
    whose weights or constants are pickled, or that is no torch.export archive at all."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError):
        raise TenforgeError(f"{path} is not a program saved with torch.export.save (not a "
                            "zip archive)") from None
    with archive:
        names = archive.namelist()
        if not any("/models/" in n and n.endswith(".json") for n in names):
            raise TenforgeError(f"{path} is not a program saved with torch.export.save (no "
                                "models/*.json inside); save one with torch.export.save")
        for name in names:
            if name.endswith(("_weights_config.json", "_constants_config.json")):
                config = json.loads(archive.read(name)).get("config", {})
                pickled = [k for k, meta in config.items()
                           if meta.get("use_pickle") or "custom_obj" in meta.get("path_name", "")
                           or "opaque_obj" in meta.get("path_name", "")]
                if pickled:
                    raise TenforgeError(f"{path} stores {', '.join(pickled[:3])} as pickled "
                                        "objects; tenforge loads .pt2 files as data only")
        copy = Path(folder) / path.name
        with zipfile.ZipFile(copy, "w", zipfile.ZIP_STORED) as out:
            for info in archive.infolist():
                blank = "/data/sample_inputs/" in info.filename
                out.writestr(info, b"" if blank else archive.read(info.filename))
    return copy


@contextlib.contextmanager
def _torch_export_log() -> Iterator[list[str]]:
    """torch.export.load logs why it failed (with a traceback) instead of raising it: keep
    those messages for the one-line refusal, and off the user's terminal."""
    import logging

    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            cause = record.exc_info[1] if record.exc_info else ""
            messages.append(f"{record.getMessage()} {cause}")

    logger = logging.getLogger("torch.export")
    handlers, propagate = logger.handlers, logger.propagate
    logger.handlers, logger.propagate = [Keep()], False  # torch attaches its own handler
    try:
        yield messages
    finally:
        logger.handlers, logger.propagate = handlers, propagate


def _why_unreadable(path: Path, exc: Exception, logged: list[str]) -> str:
    """One line: a pytree type registered by another library (a transformers ModelOutput)
    gets its own advice; anything else says what torch said."""
    import re

    for message in logged:
        found = re.search(r"Deserializing (\S+) in pytree is not registered", message)
        if found:
            return (f"{path}: its outputs are {found.group(1)}, a type another library "
                    "registers with torch at import; tenforge imports no library a file "
                    "names: export the model with plain tensor or tuple outputs (for "
                    "transformers, config.return_dict = False)")
    cause = logged[-1].splitlines()[-1] if logged else f"{type(exc).__name__}: {exc}"
    return f"{path} could not be read as a torch.export program: {cause[:300]}"


def exported_program(workload: Workload) -> Any:
    """The `.pt2` as a torch ExportedProgram with static input shapes."""
    import torch

    with tempfile.TemporaryDirectory(prefix="tenforge-pt2-") as folder:
        copy = _pickle_free_copy(workload.path, folder)
        with _no_unpickling(workload.path), _torch_export_log() as logged:
            try:
                program = torch.export.load(str(copy))
            except TenforgeError:
                raise
            except Exception as exc:  # noqa: BLE001 - a damaged or foreign archive
                raise TenforgeError(_why_unreadable(workload.path, exc, logged)) from None
    placeholders = {n.name: n for n in program.graph.nodes if n.op == "placeholder"}
    given = workload.shapes()
    inputs, dynamic = [], []
    for name in program.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        shape = list(getattr(value, "shape", []))
        if name in given:
            inputs.append(torch.randn(given[name]).to(value.dtype))
        elif all(isinstance(d, int) for d in shape):
            continue
        else:
            dynamic.append(f"{name} {[str(d) for d in shape]}")
    if dynamic:
        raise TenforgeError(f"{workload.path} has dynamic input dims ({'; '.join(dynamic)}); "
                            "give sizes: tenforge networks add FILE --name N --input-shape "
                            "NAME=1x3x224x224")
    if inputs:  # sizes given for dynamic dims: export again at those sizes
        program = torch.export.export(program.module(), tuple(inputs))
    return program


# ----------------------------------------------------------------------------- ONNX


def onnx_to_relax(workload: Workload) -> Any:
    """The ONNX model as a Relax module with its weights as `main` parameters."""
    try:
        import onnx
    except ImportError:
        raise TenforgeError("ONNX models need the onnx package: pip install onnx") from None
    from tvm import relax
    from tvm.relax.frontend.onnx import from_onnx

    try:
        model = onnx.load(str(workload.path))
    except Exception as exc:  # noqa: BLE001 - not protobuf, or damaged
        raise TenforgeError(f"{workload.path} is not an ONNX model: {type(exc).__name__}: "
                            f"{str(exc)[:200]}") from None
    from tvm.relax.frontend.onnx.onnx_frontend import _get_convert_map

    supported = set(_get_convert_map()) | {"If", "Constant"}
    unsupported = sorted({n.op_type for n in model.graph.node if n.op_type not in supported})
    if unsupported:
        raise TenforgeError(f"{workload.path}: TVM's ONNX frontend does not support operator "
                            f"{', '.join(unsupported)}; replace it in the model or export "
                            "the model another way (torch.export .pt2)")
    initializers = {i.name for i in model.graph.initializer}
    given, shapes, dynamic = workload.shapes(), {}, []
    for value in model.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        shape = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None
                 for d in dims]
        if value.name in given:
            shapes[value.name] = given[value.name]
        elif None in shape:
            dynamic.append(f"{value.name} {[d.dim_param or d.dim_value or '?' for d in dims]}")
        else:
            shapes[value.name] = shape
    if dynamic:
        raise TenforgeError(f"{workload.path} has dynamic input dims ({'; '.join(dynamic)}); "
                            "give sizes: tenforge networks add FILE --name N --input-shape "
                            "NAME=1x3x224x224")
    try:
        mod = from_onnx(model, shape_dict=shapes, keep_params_in_input=True)
    except Exception as exc:  # noqa: BLE001 - a frontend failure, said in one line
        raise TenforgeError(f"{workload.path}: TVM's ONNX frontend failed: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    return relax.frontend.detach_params(mod)


def relax_with_weights(workload: Workload) -> tuple[Any, dict[str, list[Any]]]:
    """A user's workload as (Relax module with weights as inputs, detached weights)."""
    from tvm import relax
    from tvm.relax.frontend.torch import from_exported_program

    if workload.kind == ONNX:
        return onnx_to_relax(workload)
    if workload.kind == EXPORTED:
        program = exported_program(workload)
    elif workload.kind == FACTORY:
        import torch

        model, inputs = factory_module(workload)
        with torch.no_grad():
            try:
                program = torch.export.export(model, inputs)
            except Exception as exc:  # noqa: BLE001 - torch.export's own refusal
                raise TenforgeError(f"torch.export could not export {workload.source}(): "
                                    f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}"
                                    ) from None
    else:
        raise TenforgeError(f"not a user workload: {workload.kind}")
    try:
        mod = from_exported_program(program, keep_params_as_input=True)
    except Exception as exc:  # noqa: BLE001 - an operator TVM's PyTorch frontend lacks
        raise TenforgeError(f"TVM's PyTorch frontend could not import {workload.name}: "
                            f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from None
    return relax.frontend.detach_params(mod)
