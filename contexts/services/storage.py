"""Storage quotas by size: what each project stores against its limit.

The bytes of a project's task versions and checkpoints (their snapshots' JSON text) are
counted by triggers (contexts migration 0005) in ``<internal schema>.storage_usage``, one
row per project and connection slot; the same trigger refuses, with E1617 (413), a write
that would take the project past STORAGE_QUOTA_BYTES, in the statement that writes, so the
common save costs no extra round trip and a refused write leaves nothing behind.
Retention's count quotas (RETENTION_KEEP_VERSIONS, RETENTION_CHECKPOINTS_PER_TASK) still
apply; pruning is what frees room under this one.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection

from foundation.core.db import internal_schema


def usage_table() -> str:
    return f'"{internal_schema(settings.MCP_SCHEMA)}"."storage_usage"'


def limit_bytes() -> int:
    """The per-project limit; 0: none."""
    return max(0, int(getattr(settings, "STORAGE_QUOTA_BYTES", 0) or 0))


def usage_by_project(project_ids: list[str] | None = None) -> dict[str, int]:
    """Bytes stored per project (``project_ids``: only those, each present; None: every
    project that stores anything)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT project_id, sum(bytes)::bigint FROM {usage_table()} "
            "WHERE %(projects)s::text[] IS NULL OR project_id = ANY(%(projects)s::text[]) "
            "GROUP BY project_id", {"projects": project_ids})
        used = {project: int(total) for project, total in cursor.fetchall()}
    if project_ids is not None:
        used = {project: used.get(project, 0) for project in project_ids}
    return used


def overview(project_ids: list[str] | None = None) -> dict[str, Any]:
    """Use against the limit per project, fullest first: {limitBytes, projects: [{projectId,
    usedBytes, percent}], usedBytes (all listed), fullest (percent of the fullest)}."""
    limit = limit_bytes()
    used = usage_by_project(project_ids)
    rows: list[dict[str, Any]] = [{"projectId": project, "usedBytes": total,
             "percent": round(100 * total / limit, 1) if limit else None}
            for project, total in used.items()]
    rows.sort(key=lambda r: (-r["usedBytes"], r["projectId"]))
    return {"limitBytes": limit, "projects": rows,
            "usedBytes": sum(r["usedBytes"] for r in rows),
            "fullest": rows[0]["percent"] if rows and limit else None}


def recount() -> None:
    """Rebuild the counters from the tables (after repairs done around the triggers)."""
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT "{internal_schema(settings.MCP_SCHEMA)}".'
                       "recount_storage_usage()")
