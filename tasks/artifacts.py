"""Prefect artifacts: what a person sees on a flow run's page in the UI.

Every flow publishes a markdown summary when it finishes (flows._runs.recorded_run); long work
publishes a progress artifact and moves it along; flows with a table or a picture to show
(the leaderboard, the tuning comparison, the tuning curve) add their own markdown, rendered by
tasks.rendering and published by the tasks of tasks.prefect_reports. Outside a Prefect flow
run these do nothing, so the same steps run from plain Python.
"""

from __future__ import annotations

from typing import Callable

from prefect.runtime import flow_run


def in_flow_run() -> bool:
    return flow_run.id is not None


def _key(text: str) -> str:
    """Artifact keys: lowercase letters, digits and dashes only."""
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-")


def publish_markdown(key: str, markdown: str, description: str | None = None) -> None:
    if not in_flow_run():
        return
    from prefect.artifacts import create_markdown_artifact

    create_markdown_artifact(markdown=markdown, key=_key(key), description=description)


def progress_reporter(key: str, description: str) -> Callable[[int, int], None]:
    """A callback (done, total) that keeps a progress artifact current (at most every 1%).

    The last report is read back: a run's page must not show 0% for finished work. CI once saw
    a collect run complete with its progress artifact still at 0 (tests/test_service.py), so a
    final value the server does not hold is written again, with a warning in the run's log."""
    if not in_flow_run():
        return lambda done, total: None
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    artifact_id = create_progress_artifact(progress=0.0, key=_key(key), description=description)
    last = [0.0]

    def update(done: int, total: int) -> None:
        percent = min(100.0 * done / total if total else 100.0, 100.0)
        if percent - last[0] >= 1.0 or done >= total:
            update_progress_artifact(artifact_id, progress=percent)
            last[0] = percent
            if done >= total:
                _make_sure_it_holds(artifact_id, percent)

    return update


def _make_sure_it_holds(artifact_id, percent: float) -> None:
    from prefect.artifacts import update_progress_artifact
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterId
    from prefect.logging import get_run_logger

    with get_client(sync_client=True) as client:
        (held,) = client.read_artifacts(
            artifact_filter=ArtifactFilter(id=ArtifactFilterId(any_=[artifact_id])))
    if held.data is None or float(held.data) != percent:
        get_run_logger().warning(f"progress artifact {artifact_id} holds {held.data!r}, not "
                                 f"{percent}: writing it again")
        update_progress_artifact(artifact_id, progress=percent)
