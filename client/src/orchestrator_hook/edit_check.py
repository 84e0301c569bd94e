"""The check before an edit: Claude Code's synchronous PreToolUse hook for Edit, Write,
MultiEdit and NotebookEdit (``launch.py PreEdit``).

It claims the file for this session's task (``claim_files``, paths relative to the
repository root) and answers Claude Code with what the service said: nothing when no
other task's live session holds the file; under the project's ``warn`` policy a short
note the model reads next to the tool result (``additionalContext``); under ``block`` a
``deny`` with the reason, so the edit does not happen. Notices waiting for this session
(another agent began editing one of its files) ride along.

A file this session claimed cleanly (no one else on it) is not checked again for
``claimReuseSeconds`` (lite.DEFAULT_CLAIM_REUSE_SECONDS, 300; 0 checks every edit): an
agent edits the same file many times in a row, and those checks could only say "still
yours". What they might have said arrives anyway: another agent that starts on the
file is told it is ours and we get a notice with the next flush, which also renews
the claim (claiming it again, with every warning, if it was released or lapsed).

It is on the edit path, so it is built like the PostToolUse fast path (``lite``): the
standard library's ``os``, ``json``, ``time`` and ``socket`` only, one short call, and
with the service down or slow it allows the edit and says nothing: a connection refused
costs nothing, a service that does not answer costs at most ``editCheckSeconds``; after a
failure the next checks skip the call for a moment (the client's ``down-until`` marker).
"""

from __future__ import annotations

import json

from orchestrator_hook import lite

# The whole call is limited by the client's editCheckSeconds (lite.DEFAULT_EDIT_CHECK_SECONDS,
# 0.5 s): the service answers a claim in a few milliseconds (a conflict is recorded after
# its answer), but a server across a network needs its round trips and a TLS handshake.
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
    claude_session = lite.claude_session_of(payload)
    entry = lite.mapped_session(root, claude_session) or {}
    session_id = None if entry.get("ended") else entry.get("sessionId")
    paths = lite.edited_paths(payload.get("tool_input"), project_dir)
    if not isinstance(session_id, str) or not paths or lite.service_down(root):
        return None
    reuse = float(config["claim_reuse_seconds"])
    if lite.claimed_recently(root, claude_session, session_id, paths, reuse):
        return None
    from orchestrator_hook.transport import Client, ServiceUnavailable, ToolRefused

    try:
        limit = float(config["edit_check_seconds"])  # type: ignore[arg-type]
        client = Client(str(config["url"]), str(config["token"]), limit,
                        project=config["project_id"], ca_file=config.get("ca_file"))
        answer = client.call("claim_files", {"sessionId": session_id, "paths": paths}, limit)
    except ServiceUnavailable as exc:
        # Over the rate limit too: the edit goes ahead unchecked, and the checks stay off
        # the network for the Retry-After the service asked for.
        lite.mark_down(root, max(lite.DOWN_SECONDS, exc.retry_after or 0))
        lite.log(root, f"PreEdit edit check skipped: service unavailable: {exc}")
        return None
    except ToolRefused as exc:
        if exc.code not in SESSION_GONE:
            lite.log(root, f"PreEdit edit check refused: {exc}")
        return None
    except ValueError as exc:
        lite.log(root, f"PreEdit edit check skipped: {exc}")
        return None
    if clean(answer):
        lite.remember_claims(root, claude_session, session_id, paths, reuse)
    return decision(answer)


def clean(answer: dict[str, object]) -> bool:
    """The file is ours alone: claimed, no one else holds it, no warning, nothing blocked.
    Only then may the next edits of it skip the check (lite.DEFAULT_CLAIM_REUSE_SECONDS);
    a file shared with another task is checked before every edit."""
    return not (answer.get("blocked") or answer.get("message") or answer.get("holders")
                or answer.get("warnings") or answer.get("conflicts"))


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
