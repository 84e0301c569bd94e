"""Statements that bring graph items in step with Postgres, and the best-effort ``run``.

Task, session and work changes reach the graph through the outbox (graph.services.outbox);
relationship changes are written at once by their service with ``run``. Every write is
best effort: Postgres already holds the truth, so a failure is logged, reported to the
caller ("failed") and repaired by the outbox drain or ``sync_graph``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.conf import settings

from contexts.models import TaskContext
from graph import backend
from graph.models import TaskRelationship
from graph.types import GRAPH_LABELS, StoredEdge
from sessions.models import ActiveSession, SessionWork

logger = logging.getLogger("orchestrator.graph")

Statements = list[tuple[str, dict[str, Any]]]


def run(statements: Statements) -> str:
    """"synced", "disabled" (ENABLE_NEO4J off) or "failed" (reported, repaired later)."""
    if not settings.ENABLE_NEO4J:
        return "disabled"
    if not backend.available():
        return "failed"
    try:
        backend.write(statements)
    except Exception as exc:
        logger.warning("graph write failed (sync_graph will repair it): %s",
                       (str(exc).splitlines() or [type(exc).__name__])[0][:200])
        return "failed"
    return "synced"


def task_props(task: TaskContext) -> dict[str, Any]:
    return {"taskId": task.task_id, "name": task.name, "status": task.status or "pending",
            "phase": task.current_phase, "priority": task.priority if task.priority is not None
            else 50, "score": None if task.score is None else float(task.score)}


def handles_statement(pairs: Iterable[tuple[str, str]], via: str) -> tuple[str, dict[str, Any]]:
    """Agent-HANDLES->Task for (agentId, taskId) pairs, creating missing Agent nodes.
    ``via`` says where the assignment comes from: 'agentType' or 'session'."""
    return ("UNWIND $rows AS r MERGE (a:Agent {agentId: r.agent}) ON CREATE SET a.type = "
            "r.agent WITH a, r MATCH (t:Task {taskId: r.task}) "
            "MERGE (a)-[:HANDLES {via: $via}]->(t)",
            {"rows": [{"agent": a, "task": t} for a, t in pairs], "via": via})


def delete_matched(match: str, name: str) -> str:
    """``match``, then DELETE what ``name`` matched, every match read before the first
    delete. ArcadeDB reads matches lazily while a DELETE runs, and deleting many edges of
    one vertex that way (one agent HANDLES every task it works on: all hook clients are
    ``claude-code``) failed with EntityNotFound, so an outbox batch of many tasks never
    drained and every later drain retried it. Collected first it is the same statement."""
    return f"{match} WITH collect(DISTINCT {name}) AS doomed UNWIND doomed AS {name} DELETE {name}"


def task_statements(task_id: str) -> Statements:
    """Bring one Task node (and its agentType HANDLES edge) in step with task_contexts."""
    task = TaskContext.objects.filter(task_id=task_id).first()
    if task is None:
        return [("MATCH (t:Task {taskId: $id}) DETACH DELETE t", {"id": task_id})]
    props = task_props(task)
    statements: Statements = [
        ("MERGE (t:Task {taskId: $p.taskId}) SET t.name = $p.name, t.status = $p.status, "
         "t.phase = $p.phase, t.priority = $p.priority, t.score = $p.score", {"p": props}),
        ("MATCH (:Agent)-[h:HANDLES {via: 'agentType'}]->(:Task {taskId: $id}) DELETE h",
         {"id": task_id}),
    ]
    if task.agent_type:
        statements.append(handles_statement([(task.agent_type, task_id)], "agentType"))
    return statements


def edge_props(row: TaskRelationship) -> dict[str, Any]:
    return {"s": row.source_task_id, "t": row.target_task_id,
            "reason": (row.metadata or {}).get("reason") if row.relationship_type == "blocks"
            else None,
            "strength": None if row.strength is None or row.relationship_type != "depends_on"
            else float(row.strength)}


def edge_statements(row: TaskRelationship) -> Statements:
    label = GRAPH_LABELS[row.relationship_type]
    statements = task_statements(row.source_task_id) + task_statements(row.target_task_id)
    statements.append(
        (f"MATCH (a:Task {{taskId: $e.s}}) MATCH (b:Task {{taskId: $e.t}}) "
         f"MERGE (a)-[r:{label}]->(b) SET r.reason = $e.reason, r.strength = $e.strength",
         {"e": edge_props(row)}))
    return statements


def edge_delete_statements(edge: StoredEdge) -> Statements:
    return [(f"MATCH (:Task {{taskId: $s}})-[r:{edge.label}]->(:Task {{taskId: $t}}) DELETE r",
             {"s": edge.source, "t": edge.target})]


def session_handles_statements(task_ids: Iterable[str]) -> Statements:
    """Bring the session Agent-HANDLES->Task edges of these tasks in step with Postgres."""
    tasks = sorted(set(task_ids))
    agents: dict[str, list[str]] = {task: [] for task in tasks}
    for agent, task in sorted(set(live_work().filter(task_id__in=tasks, agent_id__isnull=False)
                                  .values_list("agent_id", "task_id").distinct())):
        agents[task].append(agent)
    return [handles_sync_statement(agents, "session")]


def handles_sync_statement(agents: dict[str, list[str]],
                           via: str) -> tuple[str, dict[str, Any]]:
    """Make the ``via`` HANDLES edges to each task (a key of ``agents``) those from the
    agents in its list, in one statement: it deletes only the edges Postgres no longer
    backs and MERGEs the ones it backs (nothing written for an edge already there),
    creating missing Agent nodes. Deleting every edge and writing it again, in two
    statements, made each outbox drain rewrite edges that had not changed (a
    start_session's drain rewrote its task's HANDLES edge every time). Each task's
    doomed edges are collected (an aggregation: every match read) before any is deleted,
    as ``delete_matched`` explains."""
    return ("UNWIND $rows AS r MATCH (t:Task {taskId: r.task}) "
            "OPTIONAL MATCH (a:Agent)-[h:HANDLES {via: $via}]->(t) "
            "WHERE NOT a.agentId IN r.agents "
            "WITH r, t, collect(DISTINCT h) AS doomed FOREACH (x IN doomed | DELETE x) "
            "WITH r, t UNWIND r.agents AS agent "
            "MERGE (a:Agent {agentId: agent}) ON CREATE SET a.type = agent "
            "MERGE (a)-[:HANDLES {via: $via}]->(t)",
            {"rows": [{"task": task, "agents": names} for task, names in agents.items()],
             "via": via})


def live_work():
    """Work records of sessions that still exist (a removed session's rows are stale)."""
    return SessionWork.objects.filter(session_id__in=ActiveSession.objects.values(
        "session_id"))


def chunks(items: list[Any], size: int = 500) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]
