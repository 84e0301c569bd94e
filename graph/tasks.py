"""Celery beat jobs: repair the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS and drain
the graph outbox every GRAPH_OUTBOX_INTERVAL_SECONDS (web processes also drain it after
each change; this catches what an outage or a restart left behind)."""

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



@shared_task(name="graph.drain_outbox")
def drain_outbox_task() -> dict[str, Any]:
    from graph.services.outbox import drain_outbox

    return drain_outbox()
