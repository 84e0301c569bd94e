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

from conflicts import selectors
from contexts.models import ContextVersion
from contexts.services import cache, representation
from contexts.services.tasks import get_global_context
from graph import services as graph
from orchestrator.backends.files import check_safe_id
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


def unresolved_conflicts(task_id: str) -> list[dict[str, Any]]:
    rows = selectors.unresolved_for_task(task_id).values(
        "id", "conflict_type", "severity", "description")
    return [{"id": str(r["id"]), "type": r["conflict_type"], "severity": r["severity"],
             "description": r["description"]} for r in rows]


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
    project = get_global_context()
    bundle: dict[str, Any] = {"projectId": project.project_id,
                              "global": representation.global_part(project)}
    cache_hit = False
    database_parts = False
    if task_id is not None:
        bundle["task"], cache_hit = cache.load_task_part(task_id)
        if tier >= 1:
            if include_relationships:
                bundle["relationships"] = graph.relationships_for(task_id)
                database_parts = True
            bundle["conflicts"] = unresolved_conflicts(task_id)
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
