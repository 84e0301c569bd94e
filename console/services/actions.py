"""The "needs you" queue's actions: each one a tool call through the registry, as the
signed-in person (``admin:<name>``, the actor every console action has), and a line in
the admin's own audit trail (django.contrib.admin's LogEntry: the object's History page
and the home page's "Recent actions" show it, with the person's name).

The tools are the ones agents and the rest of the console use: check_recovery
(markRecovered), resolve_conflict, release_files, release_task_lock, resume_session. The
view only parses the request; nothing here writes a table the tools own.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.admin.models import CHANGE, LogEntry
from django.db import models

from claims.models import FileClaim
from conflicts.models import ContextConflict
from contexts.models import TaskContext
from foundation.core.errors import OrchestratorError
from foundation.core.tools import ToolContext, call_tool
from sessions.models import ActiveSession

RESOLUTIONS = ("use_a", "use_b", "merge", "ignore")
# Who may take each action (superusers have every permission). The board shows the rest.
PERMISSIONS = {
    "mark_recovered": "agent_sessions.change_activesession",
    "resume": "agent_sessions.change_activesession",
    "resolve": "conflicts.change_contextconflict",
    "release_lock": "contexts.change_taskcontext",
    "release_claim": "contexts.change_taskcontext",
}


@dataclass(frozen=True)
class Operator:
    """The person acting: their user id (for the audit trail) and name."""

    user_id: int
    name: str

    @property
    def context(self) -> ToolContext:
        return ToolContext("admin", actor=f"admin:{self.name}")


def _text(body: dict[str, Any], field: str, *, required: bool = True) -> str | None:
    value = body.get(field)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 1000:
        raise OrchestratorError("E1612", f"{field}: a non-empty string of at most 1000 "
                                "characters is required", {"field": field})
    return value


def _audit(operator: Operator, obj: models.Model | None, message: str) -> None:
    if obj is None:
        return
    LogEntry.objects.log_actions(operator.user_id, [obj], CHANGE,
                                 change_message=f"Needs-you queue: {message}",
                                 single_object=True)


def _mark_recovered(operator: Operator, body: dict[str, Any]) -> str:
    session_id = _text(body, "sessionId")
    call_tool("check_recovery", {"markRecovered": session_id}, operator.context)
    _audit(operator, ActiveSession.objects.filter(session_id=session_id).first(),
           "marked recovered (check_recovery)")
    return f"Marked {session_id} recovered."


def _resume(operator: Operator, body: dict[str, Any]) -> str:
    session_id = _text(body, "sessionId")
    answer = call_tool("resume_session", {"sessionId": session_id}, operator.context)
    _audit(operator, ActiveSession.objects.filter(session_id=session_id).first(),
           "resumed after its reset (resume_session)")
    return "Resumed." if answer.get("wasPaused") else "It was no longer paused."


def _resolve(operator: Operator, body: dict[str, Any]) -> str:
    conflict_id = _text(body, "conflictId")
    choice = _text(body, "resolution")
    if choice not in RESOLUTIONS:
        raise OrchestratorError("E1612", f"resolution: one of {', '.join(RESOLUTIONS)}",
                                {"field": "resolution", "allowed": list(RESOLUTIONS)})
    resolution: dict[str, Any] = {"action": choice, "notes": "from the console's queue"}
    if choice == "merge":
        try:
            resolution["resolvedValue"] = json.loads(_text(body, "value") or "")
        except ValueError as exc:
            raise OrchestratorError("E1644", f"the merged value is not JSON: {exc}",
                                    {"field": "value"}) from None
    answer = call_tool("resolve_conflict", {"conflictId": conflict_id,
                                            "resolution": resolution,
                                            "resolvedBy": operator.name}, operator.context)
    conflict = ContextConflict.objects.filter(pk=answer["conflictId"]).first()
    _audit(operator, conflict, f"{choice} (resolve_conflict): now {answer['newStatus']}")
    effects = "; ".join(answer.get("effects") or []) or "no side effects"
    return f"Conflict {answer['newStatus']} ({choice}): {effects}."


def _release_lock(operator: Operator, body: dict[str, Any]) -> str:
    task_id, session_id = _text(body, "taskId"), _text(body, "sessionId")
    answer = call_tool("release_task_lock", {"taskId": task_id, "sessionId": session_id},
                       operator.context)
    _audit(operator, TaskContext.objects.filter(task_id=task_id).first(),
           f"released the task lock of {session_id} (release_task_lock)")
    return "Lock released." if answer["released"] else "The lock was already gone."


def _release_claim(operator: Operator, body: dict[str, Any]) -> str:
    session_id, path = _text(body, "sessionId"), _text(body, "path")
    answer = call_tool("release_files", {"sessionId": session_id, "paths": [path]},
                       operator.context)
    claim = FileClaim.objects.filter(session_id=session_id, path__in=answer["released"]
                                     or [path]).first()
    _audit(operator, claim, f"released {session_id}'s claim on {path} (release_files)")
    return f"Released {path}." if answer["released"] else f"{path} was already released."


ACTIONS = {"mark_recovered": _mark_recovered, "resume": _resume, "resolve": _resolve,
           "release_lock": _release_lock, "release_claim": _release_claim}


def perform(operator: Operator, body: Any, may: Any) -> dict[str, Any]:
    """Run the action ``body`` names ({action, ...its arguments}); ``may(permission)`` says
    whether the operator holds a permission. Raises OrchestratorError (bad input E1612,
    not allowed E1608, or the tool's own error)."""
    if not isinstance(body, dict):
        raise OrchestratorError("E1612", "The body must be a JSON object")
    action = body.get("action")
    if action not in ACTIONS:
        raise OrchestratorError("E1612", f"action: one of {', '.join(ACTIONS)}",
                                {"field": "action", "allowed": list(ACTIONS)})
    if not may(PERMISSIONS[action]):
        raise OrchestratorError("E1608", f"You may not {action.replace('_', ' ')}: it needs "
                                f"the permission {PERMISSIONS[action]}", http_status=403)
    return {"success": True, "action": action, "message": ACTIONS[action](operator, body)}
