"""The local service for real: `tenforge service start` brings up a Prefect server, the work
pools, workers and every deployment of prefect.yaml; a deployment triggered through the REST
API the UI uses runs on a worker and lands its results in DuckDB; a wrong parameter is refused
by the API; a second start and a taken port are refused in one line."""

import json
import os
import socket
import time
import urllib.error
import urllib.request

import pytest

from storage.store import Store
from tasks.hardware import detect_local_profiles

from tests.conftest import run_cli

ONE_THREAD = detect_local_profiles()[1].name  # e.g. cpu-znver3-avx2-1t


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def api(base: str, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    request = urllib.request.Request(base + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def running(tmp_path_factory):
    folder = tmp_path_factory.mktemp("service")
    env = {"TENFORGE_SERVICE_DIR": str(folder)}
    port = free_port()
    started = run_cli("service", "start", "--port", str(port), env=env, timeout=900)
    assert started.returncode == 0, started.stdout[-2000:] + started.stderr[-2000:]
    try:
        yield {"api": f"http://127.0.0.1:{port}/api", "port": port, "env": env,
               "folder": folder}
    finally:
        stopped = run_cli("service", "stop", env=env, timeout=120)
        assert stopped.returncode == 0 and "stopped" in stopped.stdout


@pytest.mark.slow
def test_a_deployment_triggered_through_the_api_runs_and_stores_its_results(running):
    status, deployment = api(running["api"], "GET",
                             f"/deployments/name/collect/collect-{ONE_THREAD}")
    assert status == 200 and deployment["enforce_parameter_schema"]
    db = str(running["folder"] / "store.duckdb")
    status, run = api(running["api"], "POST", f"/deployments/{deployment['id']}/create_flow_run",
                      {"parameters": {"networks": ["matmul"], "candidates_per_task": 2,
                                      "db": db}})
    assert status == 201
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        _, flow_run = api(running["api"], "GET", f"/flow_runs/{run['id']}")
        if flow_run["state"]["type"] in ("COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            break
        time.sleep(1)
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT status FROM runs WHERE run_id = ?", [run["id"]]) == \
            "completed"
        assert store.scalar("SELECT count(*) FROM v_candidate_measurements WHERE "
                            "flow_run_id = ? AND error_kind IS NULL", [run["id"]]) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("parameters, message", [
    ({"candidates_per_task": "many"}, "'many' is not of type 'integer'"),
    ({"candidates_per_task": 0}, "candidates_per_task"),
    ({"networks": "resnet18"}, "is not of type 'array'"),
])
def test_a_wrong_parameter_is_refused_by_the_api_not_run(running, parameters, message):
    _, deployment = api(running["api"], "GET", f"/deployments/name/collect/collect-{ONE_THREAD}")
    status, answer = api(running["api"], "POST",
                         f"/deployments/{deployment['id']}/create_flow_run",
                         {"parameters": parameters})
    assert status == 409 and message in answer["detail"], answer


@pytest.mark.slow
def test_a_second_start_and_a_taken_port_are_refused(running, tmp_path):
    again = run_cli("service", "start", "--port", str(free_port()), env=running["env"])
    assert again.returncode == 2 and "already running" in again.stderr
    other = run_cli("service", "start", "--port", str(running["port"]),
                    env={"TENFORGE_SERVICE_DIR": str(tmp_path)})
    assert other.returncode == 2
    (line,) = other.stderr.strip().splitlines()
    assert f"port {running['port']} on 127.0.0.1 is taken by pid" in line
    assert not (tmp_path / "state.json").exists()
