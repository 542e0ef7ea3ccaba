"""What a person sees, rendered as Markdown (no Prefect): flow summaries, the tuning comparison
with its curve as a picture, the transfer and onboarding tables. tasks.prefect_reports
publishes them as artifacts."""

from __future__ import annotations

import base64
import io
import json
from typing import Any


def summary_markdown(flow: str, summary: dict[str, Any]) -> str:
    def cell(value: Any) -> str:
        return json.dumps(value, default=str) if isinstance(value, (dict, list)) else str(value)

    rows = "\n".join(f"| {name} | {cell(value)} |" for name, value in summary.items())
    return f"# {flow}: summary\n\n| | |\n|---|---|\n{rows}\n"


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


def transfer_markdown(parent: str, strategy: str, hardware: str, out: dict[str, Any]) -> str:
    """The fine-tuned model beside its parent, on the same held-out tasks of the target."""
    from storage.reports import markdown_table

    def row(model: str, what: str, metrics: dict[str, Any]) -> tuple:
        return (model, what, *(None if metrics.get(k) is None else round(metrics[k], 4)
                               for k in ("peak1", "peak5", "pairwise")))

    table = markdown_table(
        ["model", "", "top-1", "top-5", "pairwise"],
        [row(parent, "parent, as pre-trained", out["parent_test"]),
         row(out["model_id"], f"fine-tuned ({strategy}, {out['samples']} samples)",
             out["metrics"])])
    return f"# Transfer to {hardware} (held-out tasks)\n\n{table}\n"
