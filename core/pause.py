"""Yield the machine to a benchmark: a pause file that measurement work waits on.

A bench that times something it compares across runs (bench/tuning_matrix.py times a tuned
network and PyTorch) wants the other vCPUs idle; a seed collection beside it on a 2-vCPU
machine slowed PyTorch's resnet18 by up to 48%. When $TENFORGE_PAUSE_FILE names a file and
that file exists, holding the pid of a live process, measurement workers wait before their
next request and collection waits before sampling its next task: nothing is paused mid-way,
so no timing of theirs is stretched. A file whose pid is gone (a killed bench) is ignored.
$TENFORGE_PAUSE_FILE may name several files, separated by os.pathsep (':'): work waits while
any of them is held (the matrix's, and a person's running tests on the collection's vCPU).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

from core.procs import pid_alive

PAUSE_FILE_ENV = "TENFORGE_PAUSE_FILE"


def _holder_alive(path: Path) -> bool:
    try:
        pid = int(path.read_text().strip() or 0)
    except (OSError, ValueError):
        return False  # gone, or half-written: not a pause
    return pid != os.getpid() and pid_alive(pid)  # never wait on oneself


def wait_while_paused(poll_s: float = 1.0) -> float:
    """Seconds waited while a file of $TENFORGE_PAUSE_FILE held a live pid (0 when unset)."""
    paths = [Path(name) for name in os.environ.get(PAUSE_FILE_ENV, "").split(os.pathsep)
             if name]
    waited = 0.0
    while any(_holder_alive(path) for path in paths):
        time.sleep(poll_s)
        waited += poll_s
    return waited


@contextlib.contextmanager
def pause_others(path: str | Path | None) -> Iterator[None]:
    """Hold the pause file `path` (this process's pid in it) for the block; None: no-op."""
    if path is None:
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_suffix(".tmp")
    staging.write_text(str(os.getpid()))
    staging.replace(path)  # atomically: a reader never sees it half-written
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
