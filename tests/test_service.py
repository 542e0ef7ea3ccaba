"""The service for real, on whatever CPU runs the tests: `tenforge service start` brings up a
Prefect server and, for this machine's own hardware profiles, their pools, deployments and
workers, so every deployment is Ready; collect, retune and search deployments triggered through
the REST API the UI uses run on a worker and land their results in DuckDB; a wrong parameter is
refused by the API; two more machines join, and ingest brings their stores together; a second
start and a taken port are refused in one line."""

import json
import shutil
import time
from pathlib import Path

import pytest

from storage.store import Store
from tasks.hardware import profile_name
from tasks.shipped import shipped_models
from tests.conftest import run_cli
from tests.service_client import api, artifacts_of, free_port, wait_for_run

# One service for the whole run: under pytest-xdist these tests share one worker.
pytestmark = pytest.mark.xdist_group("service")

ONE_THREAD = profile_name("local-1t")  # this machine's one-thread profile, whatever its CPU


@pytest.mark.slow
def test_a_deployment_triggered_through_the_api_runs_and_stores_its_results(service):
    status, deployment = api(service["api"], "GET",
                             f"/deployments/name/collect/collect-{ONE_THREAD}")
    assert status == 200 and deployment["enforce_parameter_schema"]
    db = str(service["folder"] / "api.duckdb")
    status, run = api(service["api"], "POST", f"/deployments/{deployment['id']}/create_flow_run",
                      {"parameters": {"networks": ["matmul"], "candidates_per_task": 2,
                                      "db": db}})
    assert status == 201
    flow_run = wait_for_run(service["api"], run["id"])
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT status FROM runs WHERE run_id = ?", [run["id"]]) == \
            "completed"
        assert store.scalar("SELECT count(*) FROM v_candidate_measurements WHERE "
                            "flow_run_id = ? AND error_kind IS NULL", [run["id"]]) >= 1
    # what the UI shows on the run's page: the summary, and the progress at 100%
    by_key = artifacts_of(service["api"], run["id"])
    assert by_key["collect-summary"]["type"] == "markdown"
    assert "new_candidates" in by_key["collect-summary"]["data"]
    assert by_key["collect-progress"]["type"] == "progress"
    assert by_key["collect-progress"]["data"] == 100.0


@pytest.mark.slow
@pytest.mark.parametrize("parameters, message", [
    ({"candidates_per_task": "many"}, "'many' is not of type 'integer'"),
    ({"candidates_per_task": 0}, "candidates_per_task"),
    ({"networks": "resnet18"}, "is not of type 'array'"),
])
def test_a_wrong_parameter_is_refused_by_the_api_not_run(service, parameters, message):
    _, deployment = api(service["api"], "GET", f"/deployments/name/collect/collect-{ONE_THREAD}")
    status, answer = api(service["api"], "POST",
                         f"/deployments/{deployment['id']}/create_flow_run",
                         {"parameters": parameters})
    assert status == 409 and message in answer["detail"], answer


@pytest.mark.slow
def test_a_second_start_and_a_taken_port_are_refused(service, tmp_path):
    again = run_cli("service", "start", "--port", str(free_port()), env=service["env"])
    assert again.returncode == 2 and "already running" in again.stderr
    other = run_cli("service", "start", "--port", str(service["port"]),
                    env={"TENFORGE_SERVICE_DIR": str(tmp_path)})
    assert other.returncode == 2
    (line,) = other.stderr.strip().splitlines()
    assert f"port {service['port']} on 127.0.0.1 is taken by pid" in line
    assert not (tmp_path / "state.json").exists()


@pytest.mark.slow
def test_the_retune_deployment_runs_from_the_api(service):
    """Issue 6's "runs as a scheduled deployment": the same deployment its cron fires."""
    _, deployment = api(service["api"], "GET", f"/deployments/name/retune/retune-{ONE_THREAD}")
    assert deployment["schedules"] and deployment["schedules"][0]["schedule"]["cron"]
    db = str(service["folder"] / "retune.duckdb")
    status, run = api(service["api"], "POST", f"/deployments/{deployment['id']}/create_flow_run",
                      {"parameters": {"network": "tiny_cnn", "trials": 8, "population": 16,
                                      "minutes": 5, "cost_model": "metaschedule-xgb",
                                      "db": db}})
    assert status == 201, run
    flow_run = wait_for_run(service["api"], run["id"])
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    with Store(db, read_only=True) as store:
        assert store.scalar("SELECT count(*) FROM v_tuning_history WHERE tuning_id = ?",
                            [run["id"]]) == 1
    by_key = artifacts_of(service["api"], run["id"])
    assert "data:image/png;base64," in by_key["retune-result"]["data"]  # the tuning curve
    assert by_key["retune-progress"]["data"] == 100.0


@pytest.mark.slow
def test_every_deployment_is_ready_served_by_a_worker_of_this_machine(service):
    """What the UI shows as Ready/Not Ready: a worker polls every deployment's pool."""
    from tenforge.deployments import machine_deployments, machine_profiles

    expected = {d["name"] for d in machine_deployments(machine_profiles())["deployments"]}
    deadline = time.monotonic() + 120
    while True:
        _, found = api(service["api"], "POST", "/deployments/filter", {})
        status = {d["name"]: d["status"] for d in found}
        if set(status) >= expected and all(status[n] == "READY" for n in expected) \
                or time.monotonic() > deadline:
            break
        time.sleep(2)
    assert set(status) >= expected
    assert {n: s for n, s in status.items() if n in expected and s != "READY"} == {}


@pytest.mark.slow
def test_the_search_deployment_runs_from_the_api(service, seed_store):
    db = str(service["folder"] / "search.duckdb")
    shutil.copy(seed_store, db)
    _, deployment = api(service["api"], "GET", "/deployments/name/search/search")
    status, run = api(service["api"], "POST", f"/deployments/{deployment['id']}/create_flow_run",
                      {"parameters": {"families": ["xgb"], "trials": 1, "db": db}})
    assert status == 201, run
    flow_run = wait_for_run(service["api"], run["id"])
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    # the scheduled search holds networks out and registers its winner only if it ranks them
    # better than every model that held any of them out too (here: the shipped one)
    with Store(db, read_only=True) as store:
        registered = store.scalar("SELECT count(*) FROM models WHERE flow_run_id = ?",
                                  [run["id"]])
        summary = json.loads(store.scalar("SELECT summary_json FROM runs WHERE run_id = ?",
                                          [run["id"]]))
    gate = summary["gate"]
    assert set(gate["rivals"]) >= {m.model_id for m in shipped_models()[:1]}
    assert registered == int(gate["wins"]) and (summary["model_id"] is None) != gate["wins"]


@pytest.mark.slow
def test_an_unknown_profile_in_a_deployment_parameter_fails_in_one_line(service):
    _, deployment = api(service["api"], "GET", f"/deployments/name/collect/collect-{ONE_THREAD}")
    db = str(service["folder"] / "unknown-profile.duckdb")
    status, run = api(service["api"], "POST", f"/deployments/{deployment['id']}/create_flow_run",
                      {"parameters": {"hardware": "tpu-v9", "networks": ["matmul"], "db": db}})
    assert status == 201
    flow_run = wait_for_run(service["api"], run["id"])
    assert flow_run["state"]["type"] == "FAILED"
    message = flow_run["state"]["message"]
    assert "unknown hardware profile 'tpu-v9'; known here: local, local-1t" in message
    assert not Path(db).exists()  # refused before anything was written


FLEET_PROFILE = ('[[profile]]\nname = "{name}"\n'
                 'target = {{ kind = "llvm", mcpu = "{mcpu}", num-cores = 1 }}\n')


@pytest.mark.slow
def test_a_fleet_two_joined_workers_with_their_own_stores_ingested_centrally(service, tmp_path):
    """Two more machines on this host, each with its own hardware declaration, its own store
    and outbox, join the server; their collect deployments run on their workers; the ingest
    deployment loads both outboxes into a third store, with nothing lost or duplicated."""
    from concurrent.futures import ThreadPoolExecutor

    machines = {}
    for name, mcpu in (("fleet-a", "x86-64"), ("fleet-b", "x86-64-v2")):
        home = tmp_path / name
        home.mkdir()
        (home / "hardware.toml").write_text(FLEET_PROFILE.format(name=name, mcpu=mcpu))
        machines[name] = {"TENFORGE_SERVICE_DIR": str(home / "service"),
                          "TENFORGE_HARDWARE": str(home / "hardware.toml"),
                          "TENFORGE_DB": str(home / "store.duckdb"),
                          "TENFORGE_OUTBOX": str(home / "outbox")}
    with ThreadPoolExecutor(len(machines)) as pool:  # two machines join at once, as they would
        joins = pool.map(lambda item: run_cli("service", "join", "--api", service["api"],
                                              "--profiles", item[0], env=item[1], timeout=600),
                         machines.items())
        for joined in joins:
            assert joined.returncode == 0, joined.stdout[-2000:] + joined.stderr[-2000:]
    # a pool this machine cannot serve is refused in one line, before anything starts
    gpu = tmp_path / "gpu.toml"
    gpu.write_text('[[profile]]\nname = "gpu-h100"\ntarget = "nvidia/nvidia-h100"\n')
    import tvm

    if not tvm.cuda(0).exist:
        refused = run_cli("service", "join", "--api", service["api"], "--profiles", "gpu-h100",
                          env={"TENFORGE_HARDWARE": str(gpu),
                               "TENFORGE_SERVICE_DIR": str(tmp_path / "gpu-service")})
        assert refused.returncode == 2
        (line,) = refused.stderr.strip().splitlines()
        assert "cannot serve pool 'gpu-h100' on this machine" in line
    try:
        runs = {}
        for name in machines:
            _, deployment = api(service["api"], "GET", f"/deployments/name/collect/collect-{name}")
            status, run = api(service["api"], "POST",
                              f"/deployments/{deployment['id']}/create_flow_run",
                              {"parameters": {"networks": ["matmul"], "candidates_per_task": 3}})
            assert status == 201, run
            runs[name] = run["id"]
        for name, run_id in runs.items():
            flow_run = wait_for_run(service["api"], run_id)
            assert flow_run["state"]["type"] == "COMPLETED", (name, flow_run["state"])
        measured = {}
        for name, env in machines.items():  # each worker wrote its own store and outbox
            with Store(env["TENFORGE_DB"], read_only=True) as store:
                measured[name] = store.scalar("SELECT count(*) FROM measurements")
            assert measured[name] >= 1 and list(Path(env["TENFORGE_OUTBOX"]).rglob("*.json"))
        central = str(tmp_path / "central.duckdb")
        outboxes = [env["TENFORGE_OUTBOX"] for env in machines.values()]
        _, deployment = api(service["api"], "GET", "/deployments/name/ingest/ingest")
        for attempt in range(2):  # the second run finds nothing new
            status, run = api(service["api"], "POST",
                              f"/deployments/{deployment['id']}/create_flow_run",
                              {"parameters": {"sources": outboxes, "db": central}})
            assert status == 201, run
            flow_run = wait_for_run(service["api"], run["id"])
            assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
        with Store(central, read_only=True) as store:
            by_hardware = dict(store.query(
                "SELECT h.name, count(*) FROM measurements m JOIN candidates c USING "
                "(candidate_id) JOIN hardware h USING (hardware_id) GROUP BY 1"))
            shards = store.scalar("SELECT count(*) FROM ingested_shards")
        assert by_hardware == measured and shards == 2
    finally:
        for env in machines.values():
            stopped = run_cli("service", "stop", env=env, timeout=120)
            assert stopped.returncode == 0, stopped.stderr
