"""Graph queries used by other apps. Postgres (task_relationships) is the source of truth.

``relationships_for`` and ``unfinished_blockers`` are the interface the context service
uses (get_unified_context's relationships, switch_task's blockedBy).
"""

from __future__ import annotations

from typing import Any

from django.db.models import Q

from contexts.models import TaskContext
from graph.models import TaskRelationship

# Stored type -> (key seen from the source, key seen from the target).
_DIRECTIONS = {
    "blocks": ("blocks", "blockedBy"),
    "depends_on": ("dependsOn", "dependencyOf"),
    "related_to": ("relatedTo", "relatedTo"),
    "parent_of": ("parentOf", "childOf"),
}


def _task_refs(task_ids: set[str]) -> dict[str, dict[str, Any]]:
    rows = TaskContext.objects.filter(task_id__in=task_ids).values("task_id", "name", "status")
    return {r["task_id"]: {"taskId": r["task_id"], "name": r["name"], "status": r["status"]}
            for r in rows}


def relationships_for(task_id: str) -> dict[str, list[dict[str, Any]]]:
    """{blocks, blockedBy, dependsOn, relatedTo} of TaskRef {taskId, name, status}."""
    edges = list(TaskRelationship.objects.filter(
        Q(source_task_id=task_id) | Q(target_task_id=task_id)
    ).values_list("source_task_id", "target_task_id", "relationship_type"))
    refs = _task_refs({s for s, _, _ in edges} | {t for _, t, _ in edges})
    result: dict[str, list[dict[str, Any]]] = {
        "blocks": [], "blockedBy": [], "dependsOn": [], "relatedTo": []}
    for source, target, kind in sorted(edges):
        if kind not in _DIRECTIONS:
            continue
        outgoing, incoming = _DIRECTIONS[kind]
        key, other = (outgoing, target) if source == task_id else (incoming, source)
        if key in result and other in refs and refs[other] not in result[key]:
            result[key].append(refs[other])
    return result


def unfinished_blockers(task_id: str) -> list[dict[str, str]]:
    """Tasks that BLOCK ``task_id`` and are not completed: [{taskId, name}]."""
    blocker_ids = TaskRelationship.objects.filter(
        target_task_id=task_id, relationship_type="blocks").values("source_task_id")
    rows = (TaskContext.objects.filter(task_id__in=blocker_ids)
            .exclude(status="completed").order_by("task_id").values("task_id", "name"))
    return [{"taskId": r["task_id"], "name": r["name"]} for r in rows]
