"""get_unified_context, tiered HOT / WARM / COLD as the context bundle is.

Tiers: HOT = projectId, global, task (never dropped); WARM = relationships and unresolved
conflicts; COLD = version history. ``depth`` chooses the deepest tier to include;
``maxTokens`` (tokens ~ JSON length / 4) drops COLD parts first, then WARM, and the answer
says what it dropped in ``metadata.dropped``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from django.conf import settings
from django.db import connection

from contexts.models import CriticalKeys, ProjectLearning
from contexts.services import cache
from contexts.services.tasks import get_global_context, project_of_task
from foundation.backends.files import check_safe_id
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.prepared import Statement
from foundation.core.projects import default_project
from foundation.core.stamps import iso, now_iso

TIERS = ("hot", "warm", "cold")
WARM_PARTS = ("conflicts", "relationships")
COLD_PARTS = ("versionHistory",)


def estimate_tokens(bundle: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(bundle, default=str)) / 4)


# The hot read path's Postgres part in one round trip: the global context of the task's
# project (of the given project without a task) and, for a task, its unresolved conflicts
# (newest first), its direct relationships, each as
# [type, task is the source, other task's id, name, status], its %(versions)s newest
# versions (as four arrays, newest first), when %(critical)s, the keys marked
# critical (the context bundle's; without them here a bundle took two round trips more),
# and the project's %(learnings)s newest learnings (the bundle's WARM tier).
# Relationships come from task_relationships, the source of truth, rather than from the
# graph mirror (the spec reads them from Neo4j): one task's direct edges are an index
# lookup here, while the Bolt query cost more than the rest of a cached read (3.7 ms
# against 1.3 ms per read, graph on vs off, bench run of 2026-11-23) and could answer
# from a mirror still catching up on the outbox. Traversals (get_task_graph) still use
# the graph server.
# Raw SQL, prepared: building the ORM queries, and planning this one, cost more than
# running it.
_HOT_READ_SQL = """
SELECT g.project_id,
       json_build_object('hardRules', COALESCE(g.hard_rules, '[]'),
                         'techStack', COALESCE(g.tech_stack, '[]'),
                         'keyPaths', COALESCE(g.key_paths, '{{}}'),
                         'services', COALESCE(g.services, '{{}}'))::text AS global,
       CASE WHEN %(task)s::text IS NULL THEN NULL ELSE (
         SELECT COALESCE(json_agg(json_build_object(
                  'id', c.id::text, 'type', c.conflict_type, 'severity', c.severity,
                  'description', c.description) ORDER BY c.detected_at DESC), '[]')::text
         FROM {conflicts} c
         WHERE c.project_id = g.project_id AND c.resolution_status = 'unresolved'
           AND (c.task_a_id = %(task)s OR c.task_b_id = %(task)s))
       END AS conflicts,
       CASE WHEN %(task)s::text IS NULL THEN NULL ELSE (
         SELECT COALESCE(json_agg(json_build_array(
                  r.relationship_type, r.source_task_id = %(task)s, o.task_id, o.name,
                  o.status)), '[]')::text
         FROM {relationships} r
         JOIN {tasks} o ON o.task_id = CASE WHEN r.source_task_id = %(task)s
                                            THEN r.target_task_id ELSE r.source_task_id END
         WHERE r.project_id = g.project_id AND r.relationship_type = ANY(%(kinds)s)
           AND (r.source_task_id = %(task)s OR r.target_task_id = %(task)s))
       END AS relationships,
       h.versions, h.created, h.change_types, h.summaries,
       CASE WHEN %(critical)s THEN (SELECT k.keys FROM {critical_keys} k
                                    WHERE k.task_id = %(task)s) END AS critical,
       CASE WHEN %(learnings)s::int > 0 THEN (
         SELECT COALESCE(json_agg(l.text ORDER BY l.id DESC), '[]')::text
         FROM (SELECT id, text FROM {learnings} WHERE project_id = g.project_id
               ORDER BY id DESC LIMIT %(learnings)s::int) l)
       END AS learnings
FROM {global_context} g
LEFT JOIN LATERAL (
  SELECT array_agg(v.version ORDER BY v.version DESC) AS versions,
         array_agg(v.created_at ORDER BY v.version DESC) AS created,
         array_agg(v.change_type ORDER BY v.version DESC) AS change_types,
         array_agg(v.change_summary ORDER BY v.version DESC) AS summaries
  FROM (SELECT version, created_at, change_type, change_summary FROM {versions}
        WHERE task_id = %(task)s ORDER BY version DESC LIMIT %(versions)s::int) v) h ON true
WHERE g.project_id = COALESCE((SELECT t.project_id FROM {tasks} t WHERE t.task_id = %(task)s),
                              %(project)s)
"""
# Stored type -> (key seen from the source, key seen from the target), as the graph
# service's relationships_for answers; the other kinds are not listed in the context.
_DIRECTIONS = {"blocks": ("blocks", "blockedBy"), "depends_on": ("dependsOn", None),
               "related_to": ("relatedTo", "relatedTo")}
RELATIONSHIP_KEYS = ("blocks", "blockedBy", "dependsOn", "relatedTo")


def _relationships(rows: list[list[Any]]) -> dict[str, list[dict[str, Any]]]:
    """{blocks, blockedBy, dependsOn, relatedTo} of TaskRef {taskId, name, status}."""
    result: dict[str, list[dict[str, Any]]] = {key: [] for key in RELATIONSHIP_KEYS}
    for kind, outgoing, other_id, name, status in rows:
        key = _DIRECTIONS.get(kind, (None, None))[0 if outgoing else 1]
        ref = {"taskId": other_id, "name": name or "", "status": status or "pending"}
        if key is not None and ref not in result[key]:
            result[key].append(ref)
    for refs in result.values():
        refs.sort(key=lambda ref: ref["taskId"])
    return result


def hot_read_statement(task_id: str | None, project_id: str, *, versions: int = 0,
                       critical: bool = False, learnings: int = 0) -> Statement:
    """The hot read's one statement and its parameters. It reads projectId, global, and
    for a task its unresolved conflicts and relationships (None without a task), its
    ``versions`` newest versions (versionHistory) and, with ``critical``, its critical
    keys (criticalKeys, as stored), the project's ``learnings`` newest learnings (None
    when 0), texts newest first; the task's project wins over ``project_id``."""
    sql = _HOT_READ_SQL.format(conflicts=qualified("context_conflicts"),
                               relationships=qualified("task_relationships"),
                               tasks=qualified("task_contexts"),
                               global_context=qualified("global_context"),
                               versions=qualified("context_versions"),
                               critical_keys=connection.ops.quote_name(
                                   CriticalKeys._meta.db_table),
                               learnings=connection.ops.quote_name(
                                   ProjectLearning._meta.db_table))
    return sql, {"task": task_id, "kinds": list(_DIRECTIONS), "project": project_id,
                 "versions": versions, "critical": critical, "learnings": learnings}


def hot_read_answer(statement: Statement, row: dict[str, Any] | None) -> dict[str, Any]:
    """The hot read's answer from the row ``statement`` read (None: no global context of
    the project, E1611)."""
    if row is None:
        params = statement[1]
        task_id, project_id = params["task"], params["project"]
        get_global_context(project_of_task(task_id) or project_id)  # raises E1611
    history = zip(row["versions"] or (), row["created"] or (), row["change_types"] or (),
                  row["summaries"] or (), strict=True)
    marked = row["critical"]
    return {"projectId": row["project_id"], "global": json.loads(row["global"]),
            "conflicts": None if row["conflicts"] is None else json.loads(row["conflicts"]),
            "relationships": (None if row["relationships"] is None
                              else _relationships(json.loads(row["relationships"]))),
            "versionHistory": [{"version": version, "createdAt": iso(created),
                                "changeType": change_type, "changeSummary": summary or ""}
                               for version, created, change_type, summary in history],
            "criticalKeys": json.loads(marked) if isinstance(marked, str) else marked or [],
            "learnings": None if row["learnings"] is None else json.loads(row["learnings"])}


def _apply_budget(bundle: dict[str, Any], max_tokens: int | None) -> list[str]:
    """Drop COLD, then WARM parts until the bundle fits; HOT parts always stay."""
    dropped: list[str] = []
    if max_tokens is None:
        return dropped
    for part in (*COLD_PARTS, *WARM_PARTS):
        if estimate_tokens(bundle) <= max_tokens:
            break
        if part in bundle:
            del bundle[part]
            dropped.append(part)
    return dropped


def get_unified_context(task_id: str | None = None, *, project_id: str | None = None,
                        include_relationships: bool = True,
                        include_version_history: bool = False, max_versions: int | None = None,
                        depth: str | None = None,
                        max_tokens: int | None = None) -> dict[str, Any]:
    """The aggregated context: the task's project's global context with a task, else
    ``project_id``'s (default: the default project). E1610 for an unknown task, E1611
    without the global row."""
    return unified_context(task_id, project_id=project_id,
                           include_relationships=include_relationships,
                           include_version_history=include_version_history,
                           max_versions=max_versions, depth=depth, max_tokens=max_tokens)[0]


def _tier_and_history(task_id: str | None, depth: str | None,
                      include_version_history: bool) -> tuple[int, bool]:
    """The deepest tier asked for, and whether the version history is part of it."""
    tier = TIERS.index(depth) if depth else len(TIERS) - 1
    return tier, tier >= 2 and include_version_history and task_id is not None


def unified_statement(task_id: str | None = None, *, project_id: str | None = None,
                      include_version_history: bool = False, max_versions: int | None = None,
                      depth: str | None = None, critical: bool = False,
                      learnings: int = 0) -> Statement:
    """The hot read ``unified_context`` sends for the same arguments (E1612 for a task id
    that is not safe): a caller may send it in a round trip of its own and hand over
    the row (``prefetched``)."""
    if task_id is not None:
        check_safe_id(task_id)
    _, history = _tier_and_history(task_id, depth, include_version_history)
    limit = (min(max_versions or settings.MAX_VERSIONS_DEFAULT, settings.MAX_VERSIONS_LIMIT)
             if history else 0)
    return hot_read_statement(task_id, project_id or default_project(), versions=limit,
                              critical=critical, learnings=learnings)


def unified_context(task_id: str | None = None, *, project_id: str | None = None,
                    include_relationships: bool = True, include_version_history: bool = False,
                    max_versions: int | None = None, depth: str | None = None,
                    max_tokens: int | None = None, critical: bool = False,
                    learnings: int = 0,
                    prefetched: tuple[Statement, dict[str, Any] | None] | None = None
                    ) -> tuple[dict[str, Any], list[str]]:
    """get_unified_context's answer and, with ``critical``, the task's keys marked
    critical as stored (else []): both from the same round trip. ``learnings`` > 0 (the
    context bundle) adds the project's newest learnings as ``learnings``. ``prefetched``:
    (statement, the row it read) when the caller sent ``unified_statement`` itself; used
    only when it is the statement this call would send."""
    statement = unified_statement(task_id, project_id=project_id,
                                  include_version_history=include_version_history,
                                  max_versions=max_versions, depth=depth, critical=critical,
                                  learnings=learnings)
    tier, history = _tier_and_history(task_id, depth, include_version_history)
    if prefetched is not None and prefetched[0] == statement:
        read = hot_read_answer(statement, prefetched[1])
    else:
        read = hot_read_answer(statement, prepared.fetch_one(*statement))
    bundle: dict[str, Any] = {"projectId": read["projectId"], "global": read["global"]}
    if learnings:
        bundle["learnings"] = read["learnings"]
    cache_hit = False
    database_parts = False
    if task_id is not None:
        bundle["task"], cache_hit = cache.load_task_part(task_id)
        if tier >= 1:
            if include_relationships:
                bundle["relationships"] = read["relationships"]
                database_parts = True
            bundle["conflicts"] = read["conflicts"]
        if history:
            bundle["versionHistory"] = read["versionHistory"]
            database_parts = True
    dropped = _apply_budget(bundle, max_tokens)
    # The task part is what the cache serves; relationships and history always come
    # from Postgres, so a hit that also needed them is "hybrid".
    source = "database"
    if cache_hit:
        source = "hybrid" if database_parts else "cache"
    bundle["metadata"] = {
        "source": source,
        "loadedAt": now_iso(),
        "cacheHit": cache_hit,
        "depth": TIERS[tier],
        "tokenEstimate": estimate_tokens(bundle),
        "dropped": dropped,
    }
    return bundle, read["criticalKeys"]
