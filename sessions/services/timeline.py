"""One session's story in time order: start, events (messages, tool calls, compactions),
recorded tool calls, heartbeats, handoffs, end. Read-only, for the session page."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sessions.models import ActiveSession, SessionEvent, SessionHandoff, ToolInvocation

SHOWN_PER_SOURCE = 200


def _entry(at: datetime | None, kind: str, text: str) -> dict[str, Any]:
    return {"at": at, "kind": kind, "text": text}


def _event_text(event: SessionEvent) -> tuple[str, str]:
    parts = event.parts if isinstance(event.parts, dict) else {}
    if event.event_type == "system_event" and str(parts.get("event", "")).startswith(
            "compaction"):
        return "compaction", f"compaction #{parts.get('compactionNumber', '?')}" + (
            " (full reload)" if parts.get("fullReload") else "")
    return event.event_type, f"#{event.sequence} {event.role}: {event.content[:300]}"


def _took(note: SessionHandoff, session: ActiveSession) -> str:
    """The note is the project's: it may come from another task's or another agent's
    session, and then says so rather than reading as this task's predecessor."""
    origin = (ActiveSession.objects.filter(session_id=note.from_session_id)
              .values_list("task_id", flat=True).first())
    text = (f"took the handoff note of {note.from_agent + ' ' if note.from_agent else ''}"
            f"session {note.from_session_id}")
    if origin and origin != session.task_id:
        text += f" (on another task: {origin})"
    return text


def session_timeline(session: ActiveSession) -> list[dict[str, Any]]:
    """[{at, kind, text}] oldest first; the newest SHOWN_PER_SOURCE of each source.

    A session that crashed or was compacted ends with an undated "now <status>" entry.
    """
    sid = session.session_id
    entries = [_entry(session.started_at, "start",
                      f"started on task {session.task_id or '(none)'}")]
    events = SessionEvent.objects.filter(session_id=sid).order_by("-sequence")
    for event in events[:SHOWN_PER_SOURCE]:
        kind, text = _event_text(event)
        entries.append(_entry(event.created_at, kind, text))
    for call in ToolInvocation.objects.filter(session_id=sid)[:SHOWN_PER_SOURCE]:
        outcome = "ok" if call.success else f"failed {call.error_code or ''}".strip()
        entries.append(_entry(call.timestamp, "tool",
                              f"{call.tool} over {call.transport or '?'}: {outcome} "
                              f"({call.duration_ms:.0f} ms)"))
    # Only the latest heartbeat is stored (heartbeats are not history, see history.py).
    if session.last_heartbeat:
        entries.append(_entry(session.last_heartbeat, "heartbeat", "last heartbeat"))
    for note in SessionHandoff.objects.filter(from_session_id=sid):
        entries.append(_entry(note.created_at, "handoff",
                              f"left a handoff: {note.summary[:300]}"))
    for note in SessionHandoff.objects.filter(consumed_by_session_id=sid):
        entries.append(_entry(note.consumed_at, "handoff", _took(note, session)))
    if session.ended_at:
        entries.append(_entry(session.ended_at, "end", f"ended ({session.status})"))
    timeline = sorted((e for e in entries if e["at"] is not None), key=lambda e: e["at"])
    if not session.ended_at and session.status != "active":
        # A crash or compaction has no timestamp of its own: it is the latest state.
        timeline.append(_entry(None, session.status or "?", f"now {session.status}"
                               + (" - needs recovery" if session.recovery_needed else "")))
    return timeline
