"""The local service for real: `tenforge service start` brings up a Prefect server, the work
pools, workers and every deployment of prefect.yaml; a deployment triggered through the REST
API the UI uses runs on a worker and lands its results in DuckDB; a wrong parameter is refused
by the API; a second start and a taken port are refused in one line."""

import pytest

from storage.store import Store
from tasks.hardware import detect_local_profiles

from tests.conftest import run_cli
from tests.service_client import api, artifacts_of, free_port, wait_for_run

ONE_THREAD = detect_local_profiles()[1].name  # e.g. cpu-znver3-avx2-1t


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
