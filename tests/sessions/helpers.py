"""Helpers for the session tests: backdate heartbeats with real SQL, check output schemas."""

from __future__ import annotations

from typing import Any

import jsonschema
from django.db import connection

from foundation.core.db import qualified
from foundation.core.tools import get_tool


def backdate(session_id: str, minutes: float) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {qualified('active_sessions')} SET last_heartbeat = now() - "
            "make_interval(secs => %s), started_at = now() - make_interval(secs => %s) "
            "WHERE session_id = %s", [minutes * 60, minutes * 60 + 60, session_id])


def status_of(session_id: str) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT status, recovery_needed, recovery_type FROM "
                       f"{qualified('active_sessions')} WHERE session_id = %s", [session_id])
        return cursor.fetchone()


def conforms(tool: str, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` after checking it against the tool's declared output schema (MCP clients
    validate structuredContent against it)."""
    jsonschema.Draft202012Validator(get_tool(tool).output_schema).validate(body)
    return body
