"""The parent side of one worker: start the child, send a request, wait with a timeout, and
turn a crash or a hang into a WorkerFailure (the child is killed and restarts on next use)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from typing import Any

from core.paths import PROJECT_ROOT
from core.pause import wait_while_paused
from tasks.measure.protocol import Duplex, Unprepared


class WorkerFailure(Exception):
    """The worker died (kind 'crash') or did not answer in time (kind 'timeout')."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class Worker:
    """A child process that serves build/prepare/run requests; restarted after a failure."""

    START_TIMEOUT_S = 120.0

    def __init__(self, target: dict[str, Any], env: dict[str, str]):
        self.target = target
        self.env = env
        self.process: Any = None
        self.conn: Any = None
        self.niceness = 0  # the child's nice value (set_niceness; 0: as this process)

    def set_niceness(self, niceness: int) -> None:
        """Run this worker at `niceness` (Unix nice: higher yields the CPU to other work), now
        and after any restart. Best effort: where the OS refuses, the worker runs as it was."""
        self.niceness = niceness
        if self.process is None or self.process.poll() is not None:
            return
        pid = self.process.pid
        try:  # every thread of the child (Linux applies a nice value per thread)
            threads = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            threads = [pid]
        for tid in threads:
            try:
                os.setpriority(os.PRIO_PROCESS, tid, niceness)
            except OSError:
                pass

    def _start(self) -> None:
        # A plain `python -m tasks.measure.worker` child (not multiprocessing's spawn, which
        # re-imports the caller's __main__ and breaks unguarded scripts) talking over two
        # inherited pipes.
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = {**os.environ, **self.env,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(PROJECT_ROOT),
                                                           os.environ.get("PYTHONPATH")]))}
        nice = (["nice", "-n", str(self.niceness)]
                if self.niceness and shutil.which("nice") else [])
        self.process = subprocess.Popen(
            [*nice, sys.executable, "-m", "tasks.measure.worker", json.dumps(self.target),
             str(to_child_r), str(from_child_w)], pass_fds=(to_child_r, from_child_w), env=env,
            stdin=subprocess.DEVNULL, start_new_session=True)
        os.close(to_child_r)
        os.close(from_child_w)
        self.conn = Duplex(from_child_r, to_child_w)
        if not self.conn.poll(self.START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("measurement worker did not start within "
                               f"{self.START_TIMEOUT_S:.0f} s")
        try:
            self.conn.recv()
        except EOFError:
            code = self.process.wait(5)
            self.stop()
            raise RuntimeError(f"measurement worker failed to start (exit code {code})") from None

    def ensure_started(self) -> None:
        """Start the process if it is not running (errors surface on the next call)."""
        try:
            if self.process is None or self.process.poll() is not None:
                self._start()
        except RuntimeError:
            pass

    def call(self, request: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        """The handler's result; raises WorkerFailure or RuntimeError (handler error text)."""
        # before the request and outside its timeout: a pause never stretches a measurement
        wait_while_paused()
        if self.process is None or self.process.poll() is not None:
            self._start()
        # Local references: Ctrl-C or a deadline stops every worker from the main thread while
        # builder threads wait in here (a lent machine's collect printed their AttributeErrors
        # on 'NoneType'); this call then fails as a crash like any other.
        conn, process = self.conn, self.process
        try:
            conn.send(request)
            if not conn.poll(timeout_s):
                self.stop()
                raise WorkerFailure("timeout", f"no result within {timeout_s:.0f} s; worker killed")
            status, payload = conn.recv()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            try:
                code = process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            self.stop()
            reason = (f"killed by signal {signal.Signals(-code).name}" if code and code < 0
                      else f"exit code {code}")
            raise WorkerFailure("crash", f"worker process died ({reason})") from None
        if status == "error":
            raise RuntimeError(payload)
        if status == "unprepared":
            raise Unprepared()
        return payload

    def stop(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None
