"""Read side of the graph: get_task_graph and the queries other apps use.

The reader is chosen per call: the Bolt mirror when ENABLE_NEO4J is on, its breaker is
closed and the outbox holds no change it has yet to apply, else Postgres. A failing graph
query falls back to Postgres and the answer says so in ``metadata``; only when Postgres
fails too is the call an error (E1652).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.db import DatabaseError

from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError, failure_reason, task_not_found
from foundation.core.stamps import now_iso
from graph import backend
from graph.readers import GraphReader, Node
from graph.readers.cypher import CypherReader
from graph.readers.postgres import POSTGRES_READER
from graph.services import outbox
from sessions.services.work import orphaned_task_ids

logger = logging.getLogger("orchestrator.graph")

T = TypeVar("T")
RECENT_SESSIONS = 10
POSTGRES = POSTGRES_READER
CYPHER = CypherReader()


def answer(question: Callable[[GraphReader], T],
           mirror_lagging: bool | None = None) -> tuple[T, dict[str, Any]]:
    """Run ``question`` on the preferred reader; (result, metadata about who answered).

    ``mirror_lagging``: whether the outbox holds changes, when the caller already asked
    (None: ask here)."""
    if not settings.ENABLE_NEO4J:
        return question(POSTGRES), {"source": "postgres", "fallback": False}
    failure = "circuit open after a recent failure"
    if backend.available() and (outbox.lagging() if mirror_lagging is None
                                else mirror_lagging):
        failure = "the graph mirror is catching up on queued changes"
    elif backend.available():
        try:
            return question(CYPHER), {"source": "neo4j", "fallback": False}
        except Exception as exc:
            failure = failure_reason(exc)
            logger.warning("graph query failed, answering from Postgres: %s", exc)
    try:
        result = question(POSTGRES)
    except DatabaseError as exc:
        logger.exception("graph query's Postgres fallback failed")
        raise OrchestratorError("E1652", "Graph query failed and the Postgres fallback failed",
                                {"graph": failure, "postgres": failure_reason(exc)}) from exc
    return result, {"source": "postgres", "fallback": True, "reason": failure}


def _ref(node: Node) -> dict[str, Any]:
    return {"taskId": node["taskId"], "name": node["name"], "status": node["status"]}


def relationships_for(task_id: str, *, mirror_lagging: bool | None = None
                      ) -> dict[str, list[dict[str, Any]]]:
    """{blocks, blockedBy, dependsOn, relatedTo} of TaskRef {taskId, name, status}."""
    def ask(reader: GraphReader) -> dict[str, list[dict[str, Any]]]:
        edges = reader.edges_touching(task_id)
        others = {e["to"] if e["from"] == task_id else e["from"] for e in edges}
        refs = {n["taskId"]: _ref(n) for n in reader.nodes(others)} if others else {}
        return _directions(task_id, edges, refs,
                           ("blocks", "blockedBy", "dependsOn", "relatedTo"))

    return answer(ask, mirror_lagging)[0]


def unfinished_blockers(task_id: str) -> list[dict[str, str]]:
    """Tasks that BLOCK ``task_id`` and are not completed: [{taskId, name}], from the
    preferred reader (contexts.services.relationships asks Postgres only)."""
    blockers = answer(lambda reader: reader.unfinished_blockers(task_id))[0]
    return [{"taskId": n["taskId"], "name": n["name"]} for n in blockers]


# Stored type -> (key seen from the source, key seen from the target).
_DIRECTIONS = {
    "blocks": ("blocks", "blockedBy"),
    "depends_on": ("dependsOn", "dependencyOf"),
    "related_to": ("relatedTo", "relatedTo"),
    "parent_of": ("parentOf", "childOf"),
}


def _directions(task_id: str, edges: list[dict[str, Any]], items: dict[str, Any],
                keys: tuple[str, ...]) -> dict[str, list[Any]]:
    result: dict[str, list[Any]] = {key: [] for key in keys}
    for edge in edges:
        outgoing, incoming = _DIRECTIONS[edge["type"]]
        key, other = (outgoing, edge["to"]) if edge["from"] == task_id else (incoming, edge["from"])
        if key in result and other in items and items[other] not in result[key]:
            result[key].append(items[other])
    for values in result.values():
        values.sort(key=lambda item: item["taskId"])
    return result


def _visible(node: Node, include_completed: bool) -> bool:
    return include_completed or node["status"] != "completed"


def get_task_graph(task_id: str | None = None, depth: int = 2,
                   include_completed: bool = False,
                   project_ids: list[str] | None = None) -> dict[str, Any]:
    """get_task_graph. With ``task_id``: the tasks within ``depth`` edges (either direction) of it
    (relationships never leave a project), else the whole graph of ``project_ids`` (None:
    of every project). readyTasks, blockedTasks and summary cover the same scope; summary
    counts completed tasks even when ``include_completed`` hides them."""
    if task_id is not None and not POSTGRES.existing({task_id}):
        raise task_not_found(task_id)
    tasks_of_projects = None
    if task_id is None and project_ids is not None:
        tasks_of_projects = set(TaskContext.objects.filter(project_id__in=project_ids)
                                .values_list("task_id", flat=True))

    def ask(reader: GraphReader) -> dict[str, Any]:
        scope = reader.neighborhood(task_id, depth) | {task_id} if task_id else \
            tasks_of_projects
        all_nodes = reader.nodes(scope)
        nodes = [n for n in all_nodes if n["taskId"] == task_id or _visible(n, include_completed)]
        kept = {n["taskId"] for n in nodes}
        edges = [e for e in reader.edges(scope) if e["from"] in kept and e["to"] in kept]
        # Orphaned work has one definition and one query, the sessions app's (what
        # check_recovery and the console list too), whichever reader draws the graph.
        orphaned = orphaned_task_ids(scope)
        for node in nodes:
            if node["taskId"] in orphaned:
                node["orphaned"] = True
        blocked = reader.blocked(scope)
        result: dict[str, Any] = {
            "nodes": nodes,
            "edges": edges,
            "readyTasks": reader.ready(scope),
            "blockedTasks": blocked,
            "summary": {
                "totalTasks": len(all_nodes),
                "inProgress": sum(n["status"] == "in_progress" for n in all_nodes),
                "blocked": len(blocked),
                "completed": sum(n["status"] == "completed" for n in all_nodes),
                "pending": sum(n["status"] == "pending" for n in all_nodes),
            },
        }
        if task_id:
            result["focus"] = _focus(reader, task_id, include_completed)
        return result

    result, metadata = answer(ask)
    result["metadata"] = {**metadata, "depth": depth if task_id else None,
                          "includeCompleted": include_completed, "generatedAt": now_iso()}
    return result


def _focus(reader: GraphReader, task_id: str, include_completed: bool) -> dict[str, Any]:
    edges = reader.edges_touching(task_id)
    ids = {task_id} | {e["from"] for e in edges} | {e["to"] for e in edges}
    by_id = {n["taskId"]: n for n in reader.nodes(ids)}
    neighbours = {k: n for k, n in by_id.items()
                  if k != task_id and _visible(n, include_completed)}
    focus: dict[str, Any] = {"task": by_id.get(task_id)}
    focus.update(_directions(task_id, edges, neighbours,
                             ("blockedBy", "blocks", "dependsOn", "dependencyOf", "relatedTo",
                              "parentOf", "childOf")))
    focus["agents"] = reader.agents(task_id)
    focus["recentSessions"] = reader.recent_sessions(task_id, RECENT_SESSIONS)
    return focus
