"""Celery beat jobs: check the graph mirror every GRAPH_SYNC_INTERVAL_SECONDS (repairing
it when counts differ, and in full every GRAPH_FULL_SYNC_INTERVAL_SECONDS) and drain the
graph outbox every GRAPH_OUTBOX_INTERVAL_SECONDS, each a tool call through the
registry."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from foundation.core.jobruns import run_job
from foundation.core.tools import ToolContext, call_tool
from graph.services.sync import JOB_NAME


def summarize(result: dict[str, Any]) -> str:
    """"graph synced" starts the summary of a full pass (sync.FULL_PASS_SUMMARY)."""
    detail = result.get("error") or result.get("reason")
    return f"graph {result['graph']}" + (f": {detail}" if detail else "")


@shared_task(name="graph.sync_graph")
def sync_graph_task(transport: str = "task", check_first: bool = True) -> dict[str, Any]:
    """Beat's run checks first; ``manage.py sync_graph`` makes the full pass."""
    return run_job(JOB_NAME, "sync_graph", {"checkFirst": check_first}, transport=transport,
                   summarize=summarize)


@shared_task(name="graph.drain_outbox")
def drain_outbox_task() -> dict[str, Any]:
    """What an outage or a restart left in the outbox (web processes drain it after each
    change that queued rows). Not recorded as a job run: it runs every few seconds and
    its backlog shows in ``sync_graph``'s report."""
    return call_tool("drain_graph_outbox", {}, ToolContext("task", actor="celery-beat"))
