"""Signals other apps listen to; sent by the session services AFTER the transaction commits.

- ``session_started(sender, session_id: str, task_id: str | None, agent_id: str | None,
  started_at: datetime)``: the graph app records Session (and Agent-HANDLES->Task).
- ``session_ended(sender, session_id: str, status: str)``: status is the session's final
  status (ended, crashed, recovered, compacted).
- ``sessions_ended(sender, session_ids: list[str], status: str)``: the same for many
  sessions at once (a crash sweep), so listeners can apply it in one write.
- ``session_task_changed(sender, session_id: str, task_id: str)``: a heartbeat moved the
  session to another task (its work on it is recorded).
- ``sessions_removed(sender, session_ids: list[str], task_ids: list[str])``: the
  stale-session sweep deleted these sessions (and their work records on these tasks).
"""

from django.dispatch import Signal

session_started = Signal()
session_ended = Signal()
sessions_ended = Signal()
session_task_changed = Signal()
sessions_removed = Signal()
