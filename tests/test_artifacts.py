"""What a run's page in the UI shows: the progress artifact moves along and ends at 100%,
even when the server lost the last update (CI once saw a finished collect at 0%)."""

import pytest
from prefect import flow
from prefect.client.orchestration import get_client
from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
from prefect.runtime import flow_run

from tasks import artifacts
from tests.conftest import shared_prefect_api


def _progress_of(run_id: str) -> list[float]:
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(
            flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[run_id])))
    return [float(a.data) for a in found if a.key == "measuring"]


@flow
def _measure_ten() -> str:
    report = artifacts.progress_reporter("measuring", "ten things")
    for done in range(1, 11):
        report(done, 10)
    return str(flow_run.id)


@pytest.fixture
def api():
    """This process's flows report to the test session's server, not a temporary one."""
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: shared_prefect_api()}):
        yield


def test_progress_ends_at_100_percent(api):
    assert _progress_of(_measure_ten()) == [100.0]


def test_a_lost_last_update_is_written_again(api, monkeypatch):
    """The server answers the last update but does not keep it: the read-back catches it."""
    import prefect.artifacts as prefect_artifacts

    real = prefect_artifacts.update_progress_artifact
    calls = []

    def loses_the_first_final_update(artifact_id, progress, **kwargs):
        calls.append(progress)
        if progress == 100.0 and calls.count(100.0) == 1:
            return artifact_id  # dropped on the floor
        return real(artifact_id, progress=progress, **kwargs)

    monkeypatch.setattr(prefect_artifacts, "update_progress_artifact",
                        loses_the_first_final_update)
    assert _progress_of(_measure_ten()) == [100.0]
    assert calls.count(100.0) == 2


def test_outside_a_flow_run_progress_is_a_no_op():
    artifacts.progress_reporter("measuring", "nothing")(1, 2)  # no server, no error
