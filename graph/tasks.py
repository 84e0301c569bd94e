"""Celery beat job: repair the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="graph.sync_graph")
def sync_graph_task() -> dict[str, Any]:
    from graph.services.sync import sync_graph
    from orchestrator.jobruns import record_job_run

    with record_job_run("graph sync") as run:
        result = sync_graph()
        if result.get("success"):
            run.ok(f"graph {result['graph']}")
        else:
            run.fail(f"graph {result['graph']}: {result.get('error', '')}")
        return result

