"""What the measuring parent and its worker processes share: the pipe connection, error text
cut to one line, and the runner's "I lack this task's inputs" answer."""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any


def one_line(text: str, limit: int = 500) -> str:
    # TVM errors end with the useful line; Python tracebacks too. An error that prints IR ends
    # with IR comments ("# Metadata omitted..."): those are skipped. NUL characters go first:
    # 89 CUDA build errors on the H200 (sessions 33-37) were stored as "\x00": their text's
    # last line was a lone NUL, which str.strip() keeps.
    lines = [ln.strip() for ln in str(text).replace("\x00", "").strip().splitlines()
             if ln.strip() and not ln.strip().startswith("# ")]
    return (lines[-1] if lines else "unknown error")[:limit]


class Unprepared(Exception):
    """The runner holds no inputs/reference for this task (new worker, or evicted)."""


class Duplex:
    """A send/recv/poll connection over two pipe fds (multiprocessing's pickling framing)."""

    def __init__(self, read_fd: int, write_fd: int):
        self._read = Connection(read_fd, writable=False)
        self._write = Connection(write_fd, readable=False)

    def send(self, obj: Any) -> None:
        self._write.send(obj)

    def recv(self) -> Any:
        return self._read.recv()

    def poll(self, timeout: float) -> bool:
        return self._read.poll(timeout)

    def close(self) -> None:
        self._read.close()
        self._write.close()


class WorkerFailure(Exception):
    """The worker died (kind 'crash') or did not answer in time (kind 'timeout')."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
