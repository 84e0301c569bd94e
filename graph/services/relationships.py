"""Adding and removing task relationships: Postgres first, then the graph mirror.

A BLOCKS, DEPENDS_ON or PARENT_OF edge that would close a cycle is refused (E1616) with
the cycle spelled out. The check and the insert run under a transaction-level advisory
lock per stored type, so two concurrent requests cannot close a cycle between them.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from decimal import Decimal
from typing import Any

from django.db import connection, transaction

from contexts.models import TaskContext
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, projects_differ, task_not_found
from graph.models import TaskRelationship
from graph.readers import sortable_stamp
from graph.services import mirror
from graph.types import ACYCLIC, StoredEdge, canonical

logger = logging.getLogger("orchestrator.graph")


def _project_of(*task_ids: str) -> str:
    """The one project of the tasks: E1610 for a missing one, E1607 for two projects."""
    owners = dict(TaskContext.objects.filter(task_id__in=task_ids)
                  .values_list("task_id", "project_id"))
    missing = sorted(set(task_ids) - set(owners))
    if missing:
        raise task_not_found(missing[0], missing=missing)
    if len(set(owners.values())) > 1:
        raise projects_differ("A relationship joins two tasks of one project", owners)
    return next(iter(owners.values()))


def find_cycle(project_id: str, edge: StoredEdge) -> list[str] | None:
    """The path target -> ... -> source along ``edge.kind`` edges, closed by ``edge``."""
    rels = qualified("task_relationships")
    with connection.cursor() as cursor:
        # Reachable set first (UNION keeps it linear), then the edges inside it.
        cursor.execute(
            f"""WITH RECURSIVE reach(task_id) AS (
                    SELECT %s::varchar
                  UNION
                    SELECT r.target_task_id FROM reach JOIN {rels} r
                      ON r.project_id = %s AND r.source_task_id = reach.task_id
                     AND r.relationship_type = %s
                )
                SELECT r.source_task_id, r.target_task_id FROM {rels} r
                WHERE r.project_id = %s AND r.relationship_type = %s
                  AND r.source_task_id IN (SELECT task_id FROM reach)""",
            [edge.target, project_id, edge.kind, project_id, edge.kind])
        pairs = cursor.fetchall()
    successors: dict[str, list[str]] = {}
    for source, target in pairs:
        successors.setdefault(source, []).append(target)
    parents: dict[str, str | None] = {edge.target: None}
    queue = deque([edge.target])
    while queue:
        current = queue.popleft()
        if current == edge.source:
            path = [current]
            while parents[path[-1]] is not None:
                path.append(parents[path[-1]])  # type: ignore[arg-type]
            return [edge.source, *reversed(path)]
        for nxt in sorted(successors.get(current, [])):
            if nxt not in parents:
                parents[nxt] = current
                queue.append(nxt)
    return None


def describe(row: TaskRelationship) -> dict[str, Any]:
    metadata = row.metadata or {}
    return {
        "id": str(row.id),
        "sourceTaskId": row.source_task_id,
        "targetTaskId": row.target_task_id,
        "relationshipType": row.relationship_type,
        "reason": metadata.get("reason"),
        "strength": None if row.strength is None else float(row.strength),
        "metadata": metadata,
        "createdBy": row.created_by,
        "createdAt": sortable_stamp(row.created_at) if row.created_at else None,
    }


def add_relationship(source: str, target: str, relationship_type: str, *,
                     reason: str | None = None, strength: float | None = None,
                     metadata: dict[str, Any] | None = None,
                     created_by: str | None = None) -> dict[str, Any]:
    """Store the relationship (idempotent on source, target, type) in the tasks' project
    (E1607 when they are in two), then mirror it."""
    if source == target:
        raise OrchestratorError("E1612", "A task cannot be related to itself",
                                {"taskId": source})
    edge = canonical(source, target, relationship_type)
    project_id = _project_of(edge.source, edge.target)
    extra = dict(metadata or {})
    if reason is not None:
        extra["reason"] = reason
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                           [f"task_relationships:{project_id}:{edge.kind}"])
        if edge.kind in ACYCLIC:
            cycle = find_cycle(project_id, edge)
            if cycle:
                raise OrchestratorError(
                    "E1616", f"{relationship_type} would close a cycle: {' -> '.join(cycle)}",
                    {"cycle": cycle, "relationshipType": edge.kind})
        with connection.cursor() as cursor:
            # xmax = 0 only for a freshly inserted row: tells "created" from "already there".
            cursor.execute(
                f"""INSERT INTO {qualified('task_relationships')}
                        (project_id, source_task_id, target_task_id, relationship_type,
                         metadata, strength, created_by)
                    VALUES (%s, %s, %s, %s, %s::jsonb, %s, %s)
                    ON CONFLICT (source_task_id, target_task_id, relationship_type) DO UPDATE
                    SET metadata = COALESCE({qualified('task_relationships')}.metadata, '{{}}')
                                   || EXCLUDED.metadata,
                        strength = COALESCE(EXCLUDED.strength,
                                            {qualified('task_relationships')}.strength)
                    RETURNING id, (xmax = 0)""",
                [project_id, edge.source, edge.target, edge.kind, json.dumps(extra),
                 None if strength is None else Decimal(str(strength)), created_by])
            row_id, created = cursor.fetchone()
    row = TaskRelationship.objects.get(pk=row_id)
    graph = mirror.run(mirror.edge_statements(row))
    logger.info("relationship %s", "added" if created else "updated",
                extra={"relationship": str(row), "projectId": row.project_id, "graph": graph})
    return {"success": True, "created": created, "relationship": describe(row),
            "requestedType": relationship_type, "graph": graph,
            "graphSynced": graph == "synced"}


def remove_relationship(source: str, target: str, relationship_type: str) -> dict[str, Any]:
    """Delete the stored row (nothing to delete is not an error), then the graph edge.
    E1610 when a task is missing, as for add_relationship."""
    _project_of(source, target)
    edge = canonical(source, target, relationship_type)
    removed, _ = TaskRelationship.objects.filter(
        source_task_id=edge.source, target_task_id=edge.target,
        relationship_type=edge.kind).delete()
    graph = mirror.run(mirror.edge_delete_statements(edge))
    return {"success": True, "removed": bool(removed), "graph": graph,
            "graphSynced": graph == "synced",
            "relationship": {"sourceTaskId": edge.source, "targetTaskId": edge.target,
                             "relationshipType": edge.kind}}
