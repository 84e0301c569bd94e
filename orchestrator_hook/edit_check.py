"""The check before an edit: Claude Code's synchronous PreToolUse hook for Edit, Write,
MultiEdit and NotebookEdit (``launch.py PreEdit``).

It claims the file for this session's task (``claim_files``, paths relative to the
repository root) and answers Claude Code with what the service said: nothing when no
other task's live session holds the file; under the project's ``warn`` policy a short
note the model reads next to the tool result (``additionalContext``); under ``block`` a
``deny`` with the reason, so the edit does not happen. Notices waiting for this session
(another agent began editing one of its files) ride along.

It is on the edit path, so it is built like the PostToolUse fast path (``lite``): the
standard library's ``os``, ``json``, ``time`` and ``socket`` only, one short call, and
with the service down or slow it allows the edit and says nothing: a connection refused
costs nothing, a service that does not answer costs at most ``CALL_SECONDS``; after a
failure the next checks skip the call for a moment (the client's ``down-until`` marker).
"""

from __future__ import annotations

import json

from orchestrator_hook import lite

# Connect and whole-call limits: with Python's start-up (20-60 ms on a loaded machine),
# under the 300 ms an edit may wait for a service that does not answer. The service
# answers a claim in a few milliseconds (a conflict is recorded after its answer).
CONNECT_SECONDS = 0.1
CALL_SECONDS = 0.15
SESSION_GONE = frozenset({"E1600", "E1602", "E1603"})


def check_edit(payload: dict[str, object]) -> dict[str, object] | None:
    """The PreToolUse answer for one edit, or None (allow, say nothing)."""
    lite.note_tool_start(payload)
    project_dir = lite.project_dir_of(payload)
    if not isinstance(project_dir, str):
        return None
    config = lite.config_fields(project_dir)
    if not (config["url"] and config["token"]):
        return None
    root = lite.state_root(project_dir)
    entry = lite.mapped_session(root, lite.claude_session_of(payload)) or {}
    session_id = None if entry.get("ended") else entry.get("sessionId")
    paths = lite.edited_paths(payload.get("tool_input"), project_dir)
    if not isinstance(session_id, str) or not paths or lite.service_down(root):
        return None
    from orchestrator_hook.transport import Client, ServiceUnavailable, ToolRefused

    try:
        client = Client(str(config["url"]), str(config["token"]), CONNECT_SECONDS,
                        project=config["project_id"])
        answer = client.call("claim_files", {"sessionId": session_id, "paths": paths},
                             CALL_SECONDS)
    except ServiceUnavailable as exc:
        lite.mark_down(root)
        lite.log(root, f"PreEdit edit check skipped: service unavailable: {exc}")
        return None
    except ToolRefused as exc:
        if exc.code not in SESSION_GONE:
            lite.log(root, f"PreEdit edit check refused: {exc}")
        return None
    except ValueError as exc:
        lite.log(root, f"PreEdit edit check skipped: {exc}")
        return None
    return decision(answer)


def decision(answer: dict[str, object]) -> dict[str, object] | None:
    """Claude Code's PreToolUse output for the service's answer."""
    message = answer.get("message") if isinstance(answer.get("message"), str) else ""
    notices = [n for n in answer.get("notices") or [] if isinstance(n, str)]
    if answer.get("blocked"):
        reason = "\n".join([message, *notices]) if notices else message
        return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                       "permissionDecision": "deny",
                                       "permissionDecisionReason": reason[:9000]}}
    text = "\n\n".join(part for part in [message, *notices] if part)
    if not text:
        return None
    return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "additionalContext": text[:9000]}}


def main_output(payload: dict[str, object]) -> str:
    """What the process prints: the JSON answer, or nothing."""
    output = check_edit(payload)
    return json.dumps(output, ensure_ascii=False) if output else ""
