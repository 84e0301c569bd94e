"""get_active_session: the live session of an agent, an agent kind or a workflow.

A session records its agent id, agent kind (claude-code, codex, gemini, ...), workflow,
skill and metadata at start_session, and this lookup answers the newest live one
(status active or compacted, paused or not) matching every criterion given, in the
caller's projects. A lookup naming none of agent id, agent kind and workflow is E1612:
"any live session" is check_recovery's and the console's question, not this one's.
"""
from __future__ import annotations

import json
from typing import Any

from foundation.core.errors import OrchestratorError
from foundation.core.stamps import iso
from sessions.services.common import DETAIL_TABLE, LIVE_STATUSES, fetch_dicts, sessions_table

CRITERIA = {"agentId": "d.agent_id", "agentKind": "d.agent_kind", "workflow": "d.workflow",
            "skill": "d.skill"}


def get_active_session(*, criteria: dict[str, str | None],
                       project_ids: list[str] | None) -> dict[str, Any]:
    """{found, session (or None), liveCount}: the newest live session matching every
    non-empty criterion (agentId, agentKind, workflow, skill) in ``project_ids`` (None:
    every project); liveCount counts all that match."""
    given = {k: v for k, v in criteria.items() if v is not None}
    if not set(given) & {"agentId", "agentKind", "workflow"}:
        raise OrchestratorError("E1612", "Name the agent (agentId or agentKind) or the "
                                "workflow whose live session you want",
                                {"field": "agentId", "problem": "agentId, agentKind or "
                                                                "workflow required"})
    where = [f"{CRITERIA[key]} = %s" for key in given] + [
        "COALESCE(s.status, 'active') = ANY(%s)"]
    params: list[Any] = [*given.values(), list(LIVE_STATUSES)]
    if project_ids is not None:
        where.append("s.project_id = ANY(%s)")
        params.append(list(project_ids))
    rows = fetch_dicts(
        f"SELECT s.session_id, s.project_id, s.task_id, s.status, s.started_at, "
        "s.last_heartbeat, s.project_dir, s.git_branch, d.agent_id, d.agent_kind, "
        "d.workflow, d.skill, d.metadata, d.paused_at IS NOT NULL AS paused, "
        "count(*) OVER () AS live_count "
        f"FROM {sessions_table()} s JOIN {DETAIL_TABLE} d ON d.session_id = s.session_id "
        f"WHERE {' AND '.join(where)} "
        "ORDER BY s.started_at DESC NULLS LAST, s.session_id LIMIT 1", params)
    if not rows:
        return {"success": True, "found": False, "session": None, "liveCount": 0}
    row = rows[0]
    return {"success": True, "found": True, "liveCount": row["live_count"], "session": {
        "sessionId": row["session_id"], "projectId": row["project_id"],
        "taskId": row["task_id"], "status": row["status"] or "active",
        "startedAt": iso(row["started_at"]), "lastHeartbeat": iso(row["last_heartbeat"]),
        "projectDir": row["project_dir"], "gitBranch": row["git_branch"],
        "agentId": row["agent_id"], "agentKind": row["agent_kind"],
        "workflow": row["workflow"], "skill": row["skill"],
        "metadata": _json(row["metadata"]), "paused": row["paused"]}}


def _json(value: Any) -> dict[str, Any]:
    """A jsonb column read by a raw cursor: Django's psycopg setup hands it over as text."""
    if value is None:
        return {}
    return json.loads(value) if isinstance(value, str) else value
