"""Where a network comes from: the zoo, the user's own code, or a file of theirs.

A reference names a network wherever one is asked for (CLI, flow parameters, deployments):

    resnet18                  a zoo network (`tenforge networks`)
    path/to/model.py:factory  the user's own code, named explicitly: factory() returns
                              (torch module, example inputs)
    path/to/model.pt2         a program saved with torch.export.save: data, never unpickled
    path/to/model.onnx        an ONNX model (protobuf: data), through TVM's Relax ONNX frontend
    my_model                  a name registered in the store (`tenforge networks add`), which
                              keeps its source, content hash, input signature and tasks

Resolving a reference is cheap (no file is loaded, only hashed); tasks/workloads.py imports.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from core.errors import TenforgeError

ZOO, FACTORY, EXPORTED, ONNX = "zoo", "factory", "exported", "onnx"
SUFFIXES = {".pt2": EXPORTED, ".onnx": ONNX}
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
REFERENCE_HELP = ("a zoo network (`tenforge networks`), a registered name, FILE.py:FACTORY, "
                  "FILE.pt2 (torch.export.save) or FILE.onnx")


@dataclass(frozen=True)
class Workload:
    """A network to import: the store's name for it and where it comes from."""

    name: str  # how the store names it: the zoo name, or the registered name
    kind: str  # zoo | factory | exported | onnx
    source: str  # the zoo name, an absolute file path, or "/abs/file.py:factory"
    content_hash: str = ""  # sha256 of the file ("" for the zoo: its code is tenforge's)
    # Sizes for dynamic input dims, given at registration: ((input name, shape), ...)
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()

    @property
    def is_zoo(self) -> bool:
        return self.kind == ZOO

    @property
    def path(self) -> Path:
        return Path(self.source.rsplit(":", 1)[0] if self.kind == FACTORY else self.source)

    def shapes(self) -> dict[str, list[int]]:
        return {name: list(shape) for name, shape in self.input_shapes}


def file_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_name(name: str) -> str:
    from tasks import networks

    if not _NAME.match(name):
        raise TenforgeError(f"network name {name!r} is not usable: start with a letter, then "
                            "letters, digits, '_', '.' or '-' (64 at most)")
    if name in networks.ZOO:  # the zoo's names resolve first: this one could never be named
        raise TenforgeError(f"network name {name!r} is a zoo network's; choose another "
                            "(--name)")
    return name


def parse_input_shapes(values: list[str] | None) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """`NAME=1x3x224x224` options -> ((NAME, (1, 3, 224, 224)), ...)."""
    shapes = []
    for value in values or []:
        name, _, dims = value.partition("=")
        try:
            shape = tuple(int(d) for d in dims.lower().split("x"))
        except ValueError:
            shape = ()
        if not name or not shape or min(shape) < 1:
            raise TenforgeError(f"--input-shape {value!r}: expected NAME=DIMS with positive "
                                "dims, like input=1x3x224x224")
        shapes.append((name, shape))
    return tuple(shapes)


def file_workload(reference: str, name: str | None = None,
                  input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()) -> Workload:
    """A reference to a user's file, checked to exist and hashed (not loaded)."""
    text, factory = reference, None
    if not reference.endswith(tuple(SUFFIXES)) and ":" in reference:
        text, factory = reference.rsplit(":", 1)
    path = Path(text).expanduser()
    kind = FACTORY if factory is not None else SUFFIXES.get(path.suffix)
    if kind is None or (kind == FACTORY and (path.suffix != ".py" or not factory.isidentifier())):
        raise TenforgeError(f"unknown network {reference!r}; give {REFERENCE_HELP}")
    if not path.is_file():
        raise TenforgeError(f"network file {text} does not exist (give {REFERENCE_HELP})")
    path = path.resolve()
    source = f"{path}:{factory}" if kind == FACTORY else str(path)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", path.stem)
    default = stem if stem[:1].isalpha() else f"net_{stem}"
    from tasks import networks

    if name is None and default in networks.ZOO:  # resnet18.onnx: not the zoo's resnet18
        default = f"{default}_{path.suffix.lstrip('.')}"
    return Workload(name=check_name(name or default), kind=kind, source=source,
                    content_hash=file_hash(path), input_shapes=input_shapes)


def looks_like_file(reference: str) -> bool:
    return (reference.endswith(tuple(SUFFIXES)) or ".py:" in reference
            or "/" in reference or reference.endswith(".py"))


def resolve_workload(reference: str, db: str | None = None) -> Workload:
    """The workload a reference names: a zoo entry, a user's file, or a name registered in
    the store `db`. One line naming what was wrong otherwise."""
    from tasks import networks  # its ZOO is the table of networks; ZOO here is the kind

    if reference in networks.ZOO:
        return Workload(name=reference, kind=ZOO, source=reference)
    if looks_like_file(reference):
        return file_workload(reference)
    registered = registered_workload(db, reference) if db else None
    if registered is None:
        raise TenforgeError(f"unknown network {reference!r}; known: "
                            f"{', '.join(sorted(networks.ZOO))}; or give {REFERENCE_HELP}")
    if not registered.path.is_file():
        raise TenforgeError(f"network {reference!r} is registered to {registered.path}, which "
                            "no longer exists; register it again (`tenforge networks add`)")
    return registered


def registered_workload(db: str, name: str) -> Workload | None:
    """A name registered with `tenforge networks add` (or by a first use of its file)."""
    from storage import queries
    from storage.store import Store

    if not Path(db).exists():
        return None
    with Store(db, read_only=True) as store:
        row = queries.workload_row(store, name)
    if row is None:
        return None
    shapes = tuple((n, tuple(s)) for n, s in json.loads(row["input_shapes_json"] or "[]"))
    return Workload(name=row["name"], kind=row["kind"], source=row["source"],
                    content_hash=row["content_hash"], input_shapes=shapes)
