"""Prefect @task wrappers that show things: render (tasks.rendering, storage.reports) and
publish as artifacts, or print to the flow's log. Flows call these; they render nothing
themselves."""

from __future__ import annotations

from typing import Any

from prefect import task

from tasks.artifacts import publish_markdown


@task(name="publish-summary")
def publish_summary(flow: str, summary: dict[str, Any]) -> None:
    from tasks.rendering import summary_markdown

    publish_markdown(f"{flow}-summary", summary_markdown(flow, summary),
                     description=f"what this {flow} run did")


@task(name="publish-tuning-report", task_run_name="report {network} on {hardware}")
def publish_tuning_report(db: str, tuning_id: str, network: str, hardware: str) -> None:
    from tasks.rendering import tuning_markdown

    publish_markdown("retune-result", tuning_markdown(db, tuning_id, network, hardware),
                     description="this run beside the newest run of every other cost model")


@task(name="publish-transfer-report")
def publish_transfer_report(parent: str, strategy: str, hardware: str,
                            out: dict[str, Any]) -> None:
    from tasks.rendering import transfer_markdown

    publish_markdown("transfer-result", transfer_markdown(parent, strategy, hardware, out),
                     description="the fine-tuned model beside its parent on held-out tasks")


@task(name="publish-leaderboard")
def publish_leaderboard(db: str, study: str) -> None:
    from storage.reports import model_leaderboard

    publish_markdown("search-leaderboard", "# Registered models, best held-out top-1 first\n\n"
                     + model_leaderboard(db, markdown=True), description=f"after study {study}")


@task(name="publish-onboard-report")
def publish_onboard_report(hardware: str, result: dict[str, Any]) -> str:
    """Publish the three-way accuracy table; returns it as plain text for the log."""
    from tasks.onboard import accuracy_table

    publish_markdown("onboard-result", f"# Ranking accuracy on {hardware}, held-out tasks\n\n"
                     + accuracy_table(result, markdown=True),
                     description="pre-trained vs fine-tuned vs MetaSchedule's XGB")
    return accuracy_table(result)


@task(name="pipeline-report")
def pipeline_report(db: str, network: str, hardware: str) -> None:
    """Print what the store holds and how the retunes compare; publish the store report."""
    from storage.reports import (
        measurement_summary,
        model_leaderboard,
        store_report,
        tuning_comparison,
    )

    print(measurement_summary(db))
    print(model_leaderboard(db))
    print(tuning_comparison(db, network, hardware))
    publish_markdown("pipeline-report", store_report(db, markdown=True),
                     description="what the store holds after this pipeline run")
