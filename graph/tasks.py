"""Celery beat job: repair the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from orchestrator import metrics


@shared_task(name="graph.sync_graph")
def sync_graph_task() -> dict[str, Any]:
    from graph.services.sync import sync_graph

    report = sync_graph()
    if report.get("success"):
        metrics.mark_job_success("sync_graph")
    return report

