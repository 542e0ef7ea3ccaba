"""Helpers for the tests that run the real service: a free port, the Prefect REST API (the
one the UI uses), and waiting for a flow run to end."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

FINAL_STATES = ("COMPLETED", "FAILED", "CRASHED", "CANCELLED")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(base: str, method: str, path: str, body: dict | None = None,
        tries: int = 6) -> tuple[int, object]:
    """One REST call; a 503 (the server's SQLite busy while many workers poll it on a 2-core
    box) is retried with backoff, as the UI's client does."""
    for attempt in range(tries):
        request = urllib.request.Request(base + path, method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=120) as response:  # a busy 2-core box
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            answer = error.code, json.loads(error.read() or b"null")
            if error.code != 503 or attempt == tries - 1:
                return answer
        time.sleep(2 ** attempt)
    raise AssertionError("unreachable")


def wait_for_run(base: str, run_id: str, timeout_s: float = 900) -> dict:
    deadline = time.monotonic() + timeout_s
    while True:
        _, flow_run = api(base, "GET", f"/flow_runs/{run_id}")
        if flow_run["state"]["type"] in FINAL_STATES or time.monotonic() > deadline:
            return flow_run
        time.sleep(1)


def artifacts_of(base: str, run_id: str) -> dict[str, dict]:
    """A run's artifacts by key; a key published twice by one run is a bug, said as such."""
    _, found = api(base, "POST", "/artifacts/filter",
                   {"artifacts": {"flow_run_id": {"any_": [run_id]}}})
    keys = [a["key"] for a in found]
    twice = {k for k in keys if keys.count(k) > 1}
    assert not twice, [(a["key"], a["data"], a["created"]) for a in found if a["key"] in twice]
    return {a["key"]: a for a in found}
