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
    """A callback (done, total) that keeps a progress artifact current (at most every 1%)."""
    if not in_flow_run():
        return lambda done, total: None
    from prefect.artifacts import create_progress_artifact, update_progress_artifact

    artifact_id = create_progress_artifact(progress=0.0, key=_key(key), description=description)
    last = [0.0]

    def update(done: int, total: int) -> None:
        percent = 100.0 * done / total if total else 100.0
        if percent - last[0] >= 1.0 or done >= total:
            update_progress_artifact(artifact_id, progress=min(percent, 100.0))
            last[0] = percent

    return update
