"""Celery beat jobs: repair the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS and drain
the graph outbox every GRAPH_OUTBOX_INTERVAL_SECONDS, each a tool call through the
registry."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from orchestrator.core.jobruns import run_job
from orchestrator.core.tools import ToolContext, call_tool


def summarize(result: dict[str, Any]) -> str:
    return f"graph {result['graph']}" + (f": {result['error']}" if result.get("error") else "")


@shared_task(name="graph.sync_graph")
def sync_graph_task(transport: str = "task") -> dict[str, Any]:
    return run_job("graph sync", "sync_graph", transport=transport, summarize=summarize)


@shared_task(name="graph.drain_outbox")
def drain_outbox_task() -> dict[str, Any]:
    """What an outage or a restart left in the outbox (web processes drain it after each
    change that queued rows). Not recorded as a job run: it runs every few seconds and
    its backlog shows in ``sync_graph``'s report."""
    return call_tool("drain_graph_outbox", {}, ToolContext("task", actor="celery-beat"))
