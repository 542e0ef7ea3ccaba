"""Prefect artifacts: what a person sees on a flow run's page in the UI.

Every flow publishes a markdown summary when it finishes (flows._runs.recorded_run); long work
publishes a progress artifact and moves it along; flows with a table or a picture to show
(the leaderboard, the tuning comparison, the tuning curve) add their own markdown.
Here, not in flows/, because the Prefect tasks (tasks.prefect_tasks) report progress too. Outside a
Prefect flow run these do nothing, so the same steps run from plain Python.
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any, Callable

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


def summary_markdown(flow: str, summary: dict[str, Any]) -> str:
    def cell(value: Any) -> str:
        return json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)

    rows = "\n".join(f"| {name} | {cell(value)} |" for name, value in summary.items())
    return f"# {flow}: summary\n\n| | |\n|---|---|\n{rows}\n"


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


def png_markdown(figure: Any, alt: str) -> str:
    """A matplotlib figure as an inline image (a data URI: the artifact carries the picture;
    nothing to host)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=90)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return f"![{alt}](data:image/png;base64,{encoded})"


def tuning_markdown(db: str, tuning_id: str, network: str, hardware: str) -> str:
    """The tuning comparison of `network` on `hardware` and this run's curve, as a picture."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from storage.queries import tuning_curve_points
    from storage.reports import tuning_comparison
    from storage.store import Store

    with Store(db, read_only=True) as store:
        points = tuning_curve_points(store, tuning_id)
    parts = [f"# {network} on {hardware}", tuning_comparison(db, network, hardware,
                                                              markdown=True)]
    if points:
        figure, axes = plt.subplots(1, 2, figsize=(10, 3.2))
        trials, wall, est = zip(*points)
        for ax, x, label in ((axes[0], trials, "trials"), (axes[1], wall, "search seconds")):
            ax.step(x, est, where="post")
            ax.set_xlabel(label)
            ax.set_ylabel("estimated latency (ms)")
            ax.grid(alpha=0.3)
        figure.suptitle(f"tuning curve of {tuning_id[:8]} (best so far)")
        figure.tight_layout()
        parts.append(png_markdown(figure, "tuning curve"))
        plt.close(figure)
    return "\n\n".join(parts) + "\n"


def transfer_markdown(spec: dict[str, Any], out: dict[str, Any]) -> str:
    """The fine-tuned model beside its parent, on the same held-out tasks of the target."""
    from storage.reports import markdown_table

    def row(model: str, what: str, metrics: dict[str, Any]) -> tuple:
        return (model, what, *(None if metrics.get(k) is None else round(metrics[k], 4)
                               for k in ("peak1", "peak5", "pairwise")))

    table = markdown_table(
        ["model", "", "top-1", "top-5", "pairwise"],
        [row(spec["parent"], "parent, as pre-trained", out["parent_test"]),
         row(out["model_id"], f"fine-tuned ({spec['strategy']}, {out['samples']} samples)",
             out["metrics"])])
    return f"# Transfer to {spec['hardware']} (held-out tasks)\n\n{table}\n"
