"""Every flow records itself in the store's `runs` table: started, then completed with its
summary or failed with the first line of its error (provenance; DESIGN.md)."""

from __future__ import annotations

import uuid
from contextlib import contextmanager
from typing import Any, Iterator

from prefect.runtime import flow_run

from tasks import prefect_reports as reports
from tasks import prefect_tasks as t


def current_run_id() -> str:
    return flow_run.id or str(uuid.uuid4())


@contextmanager
def recorded_run(db: str, run_id: str, flow: str, params: dict[str, Any],
                 hardware: str | None) -> Iterator[dict[str, Any]]:
    """`with recorded_run(...) as summary:` do the work, fill `summary`; the runs row follows."""
    t.record_run(db, run_id, flow, params, hardware, "running")
    summary: dict[str, Any] = {}
    try:
        yield summary
    except BaseException as exc:
        t.record_run(db, run_id, flow, params, hardware, "failed",
                     {"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__})
        raise
    t.record_run(db, run_id, flow, params, hardware, "completed", summary)
    reports.publish_summary(flow, summary)
