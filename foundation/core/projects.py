"""Projects: one server, many repositories. Everything a project holds (tasks, sessions,
conflicts, locks, handoffs, its global context) stays inside it.

The default project (MCP_PROJECT_ID) is the spec's single project: whatever names no
project belongs to it, and it keeps the spec's Redis key and file names exactly. Other
projects get their own namespace (``namespace``).
"""

from __future__ import annotations

import re

from django.conf import settings

from foundation.core.errors import OrchestratorError, project_not_found
from foundation.core.models import Project

# The header a client names the project it works in with (hook client, .mcp.json):
# calls naming no project go there (ToolContext.project).
CLIENT_PROJECT_HEADER = "X-Orchestrator-Project"
MAX_PROJECT_ID_LENGTH = 200
# A project id names a Redis key and a directory: letters, digits, . _ : -, starting with
# a letter or digit, never "..".
PROJECT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,199}$")


def default_project() -> str:
    return settings.MCP_PROJECT_ID


def is_default(project_id: str) -> bool:
    return project_id == settings.MCP_PROJECT_ID


def namespace(project_id: str) -> str | None:
    """The path segment that keeps a project's singletons apart (Redis ``context:hot``,
    the registry and hot-context files): None for the default project, which keeps the
    spec's names, ``projects/<id>`` (files) / ``project:<id>`` (Redis) for the others."""
    return None if is_default(project_id) else project_id


def check_project_id(project_id: object, field: str = "projectId") -> str:
    """E1612 unless ``project_id`` is a usable project id (not '.' or '..')."""
    if not isinstance(project_id, str) or not PROJECT_ID.match(project_id) \
            or ".." in project_id:
        raise OrchestratorError(
            "E1612", f"{field} must be 1-{MAX_PROJECT_ID_LENGTH} letters, digits, "
            "'.', '_', ':' or '-', starting with a letter or digit, without '..'",
            {"field": field, "value": str(project_id)[:100]})
    return project_id


def create_project_row(project_id: str, name: str) -> Project:
    """A new project's row (IntegrityError when the id is taken); the caller's transaction
    adds what its app keeps per project."""
    return Project.objects.create(id=project_id, name=name)


def require_project(project_id: str) -> str:
    """E1605 unless the project exists; the id."""
    check_project_id(project_id)
    if not Project.objects.filter(pk=project_id).exists():
        raise project_not_found(project_id)
    return project_id


def scoped(queryset, principal):
    """``queryset`` (of a model with ``project_id``) as ``principal`` may see it: only its
    projects' rows for a token made with --project, every row otherwise."""
    allowed = getattr(principal, "projects", None)
    return queryset if allowed is None else queryset.filter(project_id__in=sorted(allowed))
