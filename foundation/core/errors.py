"""The E16xx error registry, the one exception type and the spec's error format.

Every failure a client can see is an ``OrchestratorError``; the REST handler and the MCP
server both turn it into ``{"success": false, "error": {...}, "timestamp": ...}``.
Codes added beyond the spec sit inside the range of their category (E1600-E1609 sessions,
E1610-E1619 contexts, ...), so a client that knows the ranges still knows what failed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from foundation.core.stamps import now_iso


@dataclass(frozen=True)
class ErrorCode:
    code: str
    name: str
    http_status: int
    message: str


_CODES = [
    # Session errors (E1600-E1609)
    ErrorCode("E1600", "SESSION_NOT_FOUND", 404, "Session ID does not exist"),
    ErrorCode("E1601", "SESSION_ALREADY_EXISTS", 409, "Session ID already in use"),
    ErrorCode("E1602", "SESSION_ENDED", 409, "Session already ended"),
    ErrorCode("E1603", "SESSION_CRASHED", 409, "Session marked as crashed; run recovery"),
    ErrorCode("E1604", "SESSION_NOT_OWNED", 403, "Session was started by another token"),
    # Project errors (E1605-E1607)
    ErrorCode("E1605", "PROJECT_NOT_FOUND", 404, "Project does not exist"),
    ErrorCode("E1606", "PROJECT_ALREADY_EXISTS", 409, "Project ID already in use"),
    ErrorCode("E1607", "PROJECTS_DIFFER", 409, "The call pairs tasks or sessions of two projects"),
    ErrorCode("E1608", "TOKEN_SCOPE_INSUFFICIENT", 403, "Token scope does not allow this tool"),
    ErrorCode("E1609", "AUTHENTICATION_REQUIRED", 401, "A valid bearer token is required"),
    # Context errors (E1610-E1619)
    ErrorCode("E1610", "TASK_NOT_FOUND", 404, "Task ID does not exist"),
    ErrorCode("E1611", "GLOBAL_CONTEXT_NOT_FOUND", 404, "Global context missing"),
    ErrorCode("E1612", "UPDATE_VALIDATION_FAILED", 400, "Invalid update data"),
    ErrorCode("E1613", "TASK_LOCKED", 409, "Task is locked by another session"),
    ErrorCode("E1614", "TASK_ALREADY_EXISTS", 409, "Task ID already in use"),
    ErrorCode("E1615", "TOOL_NOT_FOUND", 404, "No tool with this name"),
    ErrorCode("E1616", "RELATIONSHIP_CYCLE", 409, "Relationship would close a cycle"),
    ErrorCode("E1617", "STORAGE_QUOTA_EXCEEDED", 413,
              "The project's stored versions and checkpoints would pass its size limit"),
    # A token's calls (REST tools, MCP, browsing: one budget) passed API_RATE_LIMIT; the
    # answer carries Retry-After (orchestrator.web.ratelimit).
    ErrorCode("E1618", "RATE_LIMITED", 429, "Too many requests for this token"),
    # Checkpoint errors (E1620-E1629)
    ErrorCode("E1620", "CHECKPOINT_CREATION_FAILED", 500, "Could not create checkpoint"),
    ErrorCode("E1621", "INVALID_CHECKPOINT_SCOPE", 400, "Invalid scope configuration"),
    ErrorCode("E1622", "CHECKPOINT_NOT_FOUND", 404, "Checkpoint ID does not exist"),
    ErrorCode("E1623", "VERSION_NOT_FOUND", 404, "Version number does not exist"),
    ErrorCode("E1624", "ROLLBACK_FAILED", 409, "Rollback operation failed"),
    # Recovery errors (E1630-E1639)
    ErrorCode("E1630", "RECOVERY_CHECK_FAILED", 500, "Could not check recovery"),
    ErrorCode("E1631", "RECOVERY_SESSION_NOT_FOUND", 404, "Recovery session not found"),
    ErrorCode("E1632", "RECOVERY_ALREADY_COMPLETE", 409, "Session already recovered"),
    # Beyond the spec: the session categories E1600-E1609 are all taken, and a pause is
    # a recovery state (check_recovery lists an overdue one).
    ErrorCode("E1633", "SESSION_PAUSED", 409,
              "Session is paused: it takes no new task or file claim until resumed"),
    # Conflict errors (E1640-E1649)
    ErrorCode("E1640", "CONFLICT_DETECTION_FAILED", 500, "Detection query failed"),
    ErrorCode("E1641", "INVALID_CONFLICT_TYPE", 400, "Unknown conflict type"),
    ErrorCode("E1642", "CONFLICT_NOT_FOUND", 404, "Conflict ID does not exist"),
    ErrorCode("E1643", "CONFLICT_ALREADY_RESOLVED", 409, "Conflict already resolved"),
    ErrorCode("E1644", "RESOLUTION_FAILED", 422, "Resolution action failed"),
    # Sync errors (E1650-E1659)
    ErrorCode("E1650", "REDIS_SYNC_FAILED", 502, "Redis update failed"),
    ErrorCode("E1651", "FILE_SYNC_FAILED", 500, "File write failed"),
    ErrorCode("E1652", "NEO4J_QUERY_FAILED", 502, "Neo4j query failed"),
    ErrorCode("E1653", "PARTIAL_SYNC", 502, "Some backends failed"),
    ErrorCode("E1654", "DATABASE_UNAVAILABLE", 503, "PostgreSQL is unreachable"),
    # Task switch errors (E1660-E1669)
    ErrorCode("E1660", "SOURCE_TASK_NOT_FOUND", 404, "Source task does not exist"),
    ErrorCode("E1661", "TARGET_TASK_NOT_FOUND", 404, "Target task does not exist"),
    ErrorCode("E1662", "TASK_SWITCH_FAILED", 409, "Switch operation failed"),
    # Request errors (E1670-E1679): refused before any tool, page or token check
    # (orchestrator.web.hosts), on every path
    ErrorCode("E1670", "HOST_NOT_ALLOWED", 400, "Host header not in ALLOWED_HOSTS"),
    ErrorCode("E1671", "ORIGIN_NOT_ALLOWED", 403, "Browser request from a foreign origin"),
    # Configuration errors (E1690-E1699)
    ErrorCode("E1690", "CONFIG_INVALID", 500, "Invalid configuration"),
    ErrorCode("E1691", "CONFIG_MISSING", 500, "Required config missing"),
    ErrorCode("E1699", "INTERNAL_ERROR", 500, "Unexpected server fault"),
]

REGISTRY: dict[str, ErrorCode] = {c.code: c for c in _CODES}
BY_NAME: dict[str, ErrorCode] = {c.name: c for c in _CODES}


class OrchestratorError(Exception):
    """A failure with a spec code, given as ``E1610`` or by name (``TASK_NOT_FOUND``)."""

    def __init__(self, code: str, message: str | None = None, details: Any = None, *,
                 http_status: int | None = None):
        entry = REGISTRY.get(code) or BY_NAME.get(code)
        if entry is None:
            raise ValueError(f"unknown error code {code!r}")
        self.entry = entry
        self.code = entry.code
        self.message = message or entry.message
        self.details = details
        # The code's own status unless the failure says better (a tool's database code
        # for an unreachable database is 503, as E1654).
        self._http_status = http_status
        super().__init__(f"{self.code}: {self.message}")

    @property
    def http_status(self) -> int:
        return self._http_status or self.entry.http_status

    def to_dict(self) -> dict[str, Any]:
        return error_body(self.code, self.message, self.details)


def task_not_found(task_id: str, *, code: str = "E1610", field: str = "taskId",
                   missing: list[str] | None = None) -> OrchestratorError:
    """The error for a task id that names no task: E1610, or the caller's own code (such as
    switch_task's E1660/E1661), with the id under the field it came in; ``missing`` lists
    every unknown id when a call named several."""
    details: dict[str, Any] = {field: task_id}
    if missing:
        details["missing"] = list(missing)
    return OrchestratorError(code, f"Task {task_id!r} does not exist", details)


# One shape per kind of missing thing: a token limited to projects gets the same answer
# for another project's task, session, conflict or checkpoint as for one that does not
# exist (foundation.core.tools.access), so every place reporting one uses these.

def session_not_found(session_id: str, *, code: str = "E1600") -> OrchestratorError:
    if code == "E1631":
        return OrchestratorError(code, f"No session {session_id!r} to recover",
                                 {"sessionId": session_id})
    return OrchestratorError(code, f"Session {session_id!r} does not exist",
                             {"sessionId": session_id})


def conflict_not_found(conflict_id: Any) -> OrchestratorError:
    return OrchestratorError("E1642", f"Conflict {str(conflict_id)!r} does not exist",
                             {"conflictId": str(conflict_id)})


def checkpoint_not_found(checkpoint_id: str) -> OrchestratorError:
    return OrchestratorError("E1622", f"Checkpoint {checkpoint_id!r} does not exist",
                             {"checkpointId": checkpoint_id})


def project_not_found(project_id: str) -> OrchestratorError:
    return OrchestratorError("E1605", f"Project {project_id!r} does not exist",
                             {"projectId": project_id})


def projects_differ(message: str, projects: dict[str, str]) -> OrchestratorError:
    """E1607: what a call names lives in two projects (``projects``: id -> its project)."""
    return OrchestratorError("E1607", message, {"projects": projects})


# The SQLSTATE the storage trigger raises when a write would pass the project's limit
# (contexts migration 0005): RAISE ... USING ERRCODE, DETAIL = the figures as JSON.
STORAGE_QUOTA_SQLSTATE = "OQ413"


def storage_quota_exceeded(exc: BaseException) -> OrchestratorError | None:
    """E1617 (413) for a database error raised by the storage quota trigger, else None.

    Looks through the exception's causes (Django wraps psycopg's error)."""
    seen: BaseException | None = exc
    while seen is not None:
        if getattr(seen, "sqlstate", None) == STORAGE_QUOTA_SQLSTATE:
            diag = getattr(seen, "diag", None)
            try:
                details = json.loads(getattr(diag, "message_detail", None) or "{}")
            except ValueError:
                details = {}
            project = details.get("projectId", "?")
            return OrchestratorError(
                "E1617", f"Storage quota of project {project!r} exceeded: "
                f"{details.get('usedBytes')} bytes stored + {details.get('writeBytes')} "
                f"> limit {details.get('limitBytes')} bytes; nothing was written "
                "(prune old versions and checkpoints, or raise STORAGE_QUOTA_BYTES)",
                details)
        seen = seen.__cause__
    return None


def failure_reason(exc: BaseException) -> str:
    """What an answer may say about a backend's failure: the kind of error, and its
    SQLSTATE (Postgres) or status code (Bolt) when it has one. Never the server's message:
    Postgres quotes the statement, the row's values and the names of tables and columns
    (another caller's data among them), Bolt servers the query. The caller logs the whole
    message server-side, where an operator reads it."""
    seen: BaseException | None = exc
    while seen is not None:
        code = getattr(seen, "sqlstate", None) or getattr(seen, "code", None)
        if isinstance(code, str) and code:
            label = "SQLSTATE" if getattr(seen, "sqlstate", None) else "code"
            return f"{type(seen).__name__} ({label} {code})"
        seen = seen.__cause__
    return type(exc).__name__


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return {"success": False, "error": error, "timestamp": now_iso()}
