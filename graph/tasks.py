"""Celery beat jobs: repair the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS and drain
the graph outbox every GRAPH_OUTBOX_INTERVAL_SECONDS."""

from __future__ import annotations

from typing import Any

from celery import shared_task


@shared_task(name="graph.sync_graph")
def sync_graph_task() -> dict[str, Any]:
    from graph.services.sync import sync_graph
    from orchestrator.core.jobruns import record_job_run

    with record_job_run("graph sync") as run:
        result = sync_graph()
        if result.get("success"):
            run.ok(f"graph {result['graph']}")
        else:
            run.fail(f"graph {result['graph']}: {result.get('error', '')}")
        return result


@shared_task(name="graph.drain_outbox")
def drain_outbox_task() -> dict[str, Any]:
    """What an outage or a restart left in the outbox (web processes drain it after each
    change that queued rows). Not recorded as a job run: it runs every few seconds and
    its backlog shows in ``sync_graph``'s report."""
    from graph.services.outbox import drain_outbox

    return drain_outbox()
