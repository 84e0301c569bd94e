"""Signals other apps listen to, so that sessions need not know they exist; sent by the
session services AFTER the change committed.

The graph mirror is kept by an outbox: triggers on active_sessions and agent_sessions_sessionwork
queue what changed inside the changing transaction, and the graph app's receivers only
ask for a drain once it committed (graph.receivers).

- ``session_started(sender, session_id: str, task_id: str | None, agent_id: str | None,
  started_at: datetime)``
- ``session_ended(sender, session_id: str, status: str)``: status is the session's final
  status (ended, crashed, recovered, compacted).
- ``sessions_ended(sender, session_ids: list[str], status: str)``: the same for many
  sessions at once (a crash sweep).
- ``session_task_changed(sender, session_id: str, task_id: str)``: a heartbeat moved the
  session to another task (its work on it is recorded).
- ``sessions_removed(sender, session_ids: list[str], task_ids: list[str])``: these
  sessions and their work records on these tasks were deleted (``recovery.remove_sessions``,
  for retention; the stale-session sweep only closes sessions out and deletes nothing).
- ``files_edited(sender, session_id: str, task_id: str | None, paths: list[str])``: a
  live session's record_activity stored edits of these paths (as the client sent them).
  Sent before its notices are taken: a receiver may add notices for the same session.
"""

from django.dispatch import Signal

session_started = Signal()
session_ended = Signal()
sessions_ended = Signal()
session_task_changed = Signal()
sessions_removed = Signal()
files_edited = Signal()
