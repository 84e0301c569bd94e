"""get_unified_context (spec 4.1.1) with the tiered bundle of seed 001.

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

from contexts.models import ContextVersion
from contexts.services import cache, representation
from contexts.services.tasks import get_global_context
from graph import services as graph
from graph.services import outbox
from orchestrator.backends.files import check_safe_id
from orchestrator.db import qualified
from orchestrator.errors import now_iso

TIERS = ("hot", "warm", "cold")
WARM_PARTS = ("conflicts", "relationships")
COLD_PARTS = ("versionHistory",)


def estimate_tokens(bundle: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(bundle, default=str)) / 4)


def version_history(task_id: str, limit: int) -> list[dict[str, Any]]:
    rows = (ContextVersion.objects.filter(task_id=task_id).order_by("-version")
            .values("version", "created_at", "change_type", "change_summary")[:limit])
    return [{"version": r["version"], "createdAt": representation.iso(r["created_at"]),
             "changeType": r["change_type"], "changeSummary": r["change_summary"] or ""}
            for r in rows]


# The hot read path's Postgres part in one round trip: the global context, for a task its
# unresolved conflicts, newest first, and whether the graph mirror has queued changes to
# apply (then the relationships come from Postgres).
# Raw SQL because building these two ORM queries cost more than running them.
_GLOBAL_AND_CONFLICTS_SQL = """
SELECT g.project_id,
       json_build_object('hardRules', COALESCE(g.hard_rules, '[]'),
                         'techStack', COALESCE(g.tech_stack, '[]'),
                         'keyPaths', COALESCE(g.key_paths, '{{}}'),
                         'services', COALESCE(g.services, '{{}}'))::text,
       CASE WHEN %s::text IS NULL THEN NULL ELSE (
         SELECT COALESCE(json_agg(json_build_object(
                  'id', c.id::text, 'type', c.conflict_type, 'severity', c.severity,
                  'description', c.description) ORDER BY c.detected_at DESC), '[]')::text
         FROM {conflicts} c
         WHERE c.resolution_status = 'unresolved' AND (c.task_a_id = %s OR c.task_b_id = %s))
       END,
       {mirror_lagging}
FROM {global_context} g WHERE g.project_id = %s
"""


def global_and_conflicts(task_id: str | None
                         ) -> tuple[str, dict[str, Any], list[dict] | None, bool]:
    """(projectId, global part, the task's unresolved conflicts or None, graph mirror
    lagging); E1611 if the global context is missing."""
    sql = _GLOBAL_AND_CONFLICTS_SQL.format(conflicts=qualified("context_conflicts"),
                                           global_context=qualified("global_context"),
                                           mirror_lagging=outbox.LAGGING_SQL)
    with connection.cursor() as cursor:
        cursor.execute(sql, [task_id, task_id, task_id, settings.MCP_PROJECT_ID])
        row = cursor.fetchone()
    if row is None:
        get_global_context()  # raises E1611 with the usual message
    project_id, global_json, conflicts_json, mirror_lagging = row
    return (project_id, json.loads(global_json),
            None if conflicts_json is None else json.loads(conflicts_json), mirror_lagging)


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


def get_unified_context(task_id: str | None = None, *, include_relationships: bool = True,
                        include_version_history: bool = False, max_versions: int | None = None,
                        depth: str | None = None,
                        max_tokens: int | None = None) -> dict[str, Any]:
    """The aggregated context; E1610 for an unknown task, E1611 without the global row."""
    if task_id is not None:
        check_safe_id(task_id)
    tier = TIERS.index(depth) if depth else len(TIERS) - 1
    project_id, global_part, conflicts, mirror_lagging = global_and_conflicts(task_id)
    bundle: dict[str, Any] = {"projectId": project_id, "global": global_part}
    cache_hit = False
    database_parts = False
    if task_id is not None:
        bundle["task"], cache_hit = cache.load_task_part(task_id)
        if tier >= 1:
            if include_relationships:
                bundle["relationships"] = graph.relationships_for(
                    task_id, mirror_lagging=mirror_lagging)
                database_parts = True
            bundle["conflicts"] = conflicts
        if tier >= 2 and include_version_history:
            limit = min(max_versions or settings.MAX_VERSIONS_DEFAULT,
                        settings.MAX_VERSIONS_LIMIT)
            bundle["versionHistory"] = version_history(task_id, limit)
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
    return bundle
