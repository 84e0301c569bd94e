"""What the agents are told: the warning, the refusal and the holder's notice, and
the events a claim leaves in a session's log."""

from __future__ import annotations

import logging
from typing import Any

from claims.services.claimants import Claimant
from claims.services.holders import Holder
from sessions.services.events import append_events

logger = logging.getLogger("orchestrator.claims")


# -- what the agents are told ---------------------------------------------------------------

def ago(seconds: float) -> str:
    if seconds < 90:
        return f"{max(0, int(seconds))} s ago"
    if seconds < 5400:
        return f"{int(seconds // 60)} min ago"
    return f"{seconds / 3600:.1f} h ago"


def _who(holder: Holder) -> str:
    task = f"task `{holder.task_id}`" if holder.task_id else "no task"
    if holder.task_name and holder.task_name != holder.task_id:
        task += f" ({holder.task_name})"
    doing = f", working on: {holder.doing[:160]}" if holder.doing else ""
    agent = f"{holder.agent_id} " if holder.agent_id else ""
    state = "last edit" if holder.held else "held it until its claim lapsed, last edit"
    return (f"{agent}session `{holder.session_id}` on {task}{doing}; {state} "
            f"{ago(holder.seconds_ago)}")


def warning_text(holders: list[Holder], conflicts: list[dict[str, Any]],
                 recording: list[Holder] | None = None) -> str | None:
    if not holders:
        return None
    lines = ["Session orchestrator: another agent is editing the same file."]
    for holder in holders:
        lines.append(f"- `{holder.path}`: {_who(holder)}.")
    for conflict in conflicts:
        lines.append(f"Recorded as file_conflict {conflict['conflictId']} "
                     f"({conflict['severity']}) between `{conflict['taskAId']}` and "
                     f"`{conflict['taskBId']}`.")
    if recording and not conflicts:
        tasks = ", ".join(sorted({f"`{h.task_id}`" for h in recording}))
        lines.append(f"Recorded as a file_conflict with {tasks}.")
    lines.append("Keep your change to it small and say so in your context "
                 "(save_task_context), or leave the file to that task.")
    return "\n".join(lines)


def blocked_text(holders: list[Holder]) -> str:
    lines = ["Edit refused by the project's file policy (block): another agent's session "
             "holds this file."]
    for holder in holders:
        lines.append(f"- `{holder.path}`: {_who(holder)}.")
    lines.append("Work on other files, or wait until that session ends or releases it.")
    return "\n".join(lines)


def holder_notice(who: Claimant, path: str, conflict: dict[str, Any] | None) -> str:
    agent = f"{who.agent_id} " if who.agent_id else ""
    task = f"task `{who.task_id}`" if who.task_id else "no task"
    text = (f"Session orchestrator: another agent began editing `{path}`, which this "
            f"session is editing: {agent}session `{who.session_id}` on {task}.")
    if conflict:
        text += (f" Recorded as file_conflict {conflict['conflictId']} "
                 f"({conflict['severity']}).")
    return text + " Coordinate before changing it further."


def record_event(session_id: str, content: str, parts: dict[str, Any]) -> None:
    record_events([(session_id, content, parts)])


def record_events(events: list[tuple[str, str, dict[str, Any]]]) -> None:
    """(session id, content, parts): system events in the sessions' logs, one statement
    for all. A session that closed meanwhile has nothing left to tell: skipped. No
    savepoint: the append refuses a closed session without an error, so a caller's
    transaction goes on either way."""
    appended = append_events([(session_id, "system_event", "system", content, parts)
                              for session_id, content, parts in events])
    for (session_id, _, _), done in zip(events, appended, strict=True):
        if not done:
            logger.info("claim event not recorded", extra={"sessionId": session_id,
                                                           "reason": "session closed"})
