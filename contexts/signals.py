"""Signals other apps listen to, so that contexts need not know they exist.

- ``task_changed(sender, task_id: str, change_type: str)``: sent AFTER the transaction
  committed: a task was created, saved, rolled back or switched to/from (the graph app
  drains its outbox).
- ``task_switched(sender, session_id: str | None, from_task_id: str | None,
  to_task_id: str)``: sent INSIDE switch_task's transaction, after the switch is written:
  what a receiver writes commits or rolls back with the switch (the sessions app records
  that the session now works on the new task). A receiver may refuse the switch by
  raising ``OrchestratorError``: the switch rolls back (sessions: a paused session takes
  no new task, E1633).
- ``agent_of_session``: see below.
"""

from django.dispatch import Signal

task_changed = Signal()
task_switched = Signal()
# ``agent_of_session(sender, session_id: str)``: sent when a checkpoint is made in a
# session without an agent named; a receiver answers the agent id the session runs as (the
# sessions app knows it), or None.
agent_of_session = Signal()
