"""Creating and listing projects: a project is its projects row and its global context.

Both are written in one transaction, so a project always has the global context its agents
read first (hard rules, tech stack, key paths, its active task).
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, connection, transaction

from contexts.models import GlobalContext
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError
from foundation.core.models import Project
from foundation.core.projects import check_project_id, create_project_row
from foundation.core.stamps import iso, now_iso

logger = logging.getLogger("orchestrator.contexts")


def create_project(project_id: str, name: str, *, description: str | None = None
                   ) -> dict[str, Any]:
    """A new project with an empty global context. E1612 for a bad id or name, E1606 when
    the id is taken."""
    check_project_id(project_id)
    if not isinstance(name, str) or not name.strip():
        raise OrchestratorError("E1612", "name must not be empty", {"field": "name"})
    try:
        with transaction.atomic():
            project = create_project_row(project_id, name)
            GlobalContext.objects.create(project_id=project_id, project_name=name,
                                         description=description)
    except IntegrityError:
        raise OrchestratorError("E1606", f"Project {project_id!r} already exists",
                                {"projectId": project_id}) from None
    project.refresh_from_db()
    logger.info("project created", extra={"projectId": project_id})
    return {"success": True, "projectId": project.id, "name": project.name,
            "createdAt": iso(project.created_at), "timestamp": now_iso()}


# One round trip: each project with its task count, its live sessions (active or
# compacted, the sessions app's LIVE_STATUSES) and its active task; the per-project
# counts use the project-led indexes.
_LIST_SQL = """
SELECT p.id, p.name, p.created_at,
       (SELECT count(*) FROM {tasks} t WHERE t.project_id = p.id),
       (SELECT count(*) FROM {sessions} s
         WHERE s.project_id = p.id AND s.status IN ('active', 'compacted')),
       g.active_task_id
FROM {projects} p
LEFT JOIN {global_context} g ON g.project_id = p.id
WHERE %(ids)s::text[] IS NULL OR p.id = ANY(%(ids)s::text[])
ORDER BY p.id
"""


def list_projects(project_ids: list[str] | None = None) -> dict[str, Any]:
    """Every project (``project_ids``: only these), by id, with its task count, live
    sessions and active task."""
    with connection.cursor() as cursor:
        cursor.execute(_LIST_SQL.format(
            tasks=qualified("task_contexts"), sessions=qualified("active_sessions"),
            global_context=qualified("global_context"),
            projects=connection.ops.quote_name(Project._meta.db_table)),
            {"ids": project_ids})
        rows = cursor.fetchall()
    return {"projects": [{"projectId": pid, "name": name, "createdAt": iso(created),
                          "tasks": tasks, "liveSessions": live, "activeTaskId": active}
                         for pid, name, created, tasks, live, active in rows],
            "total": len(rows), "timestamp": now_iso()}
