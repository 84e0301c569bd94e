"""Signals other apps listen to, so that locks need not know they exist.

- ``lock_asked_for(sender, task_id: str, session_id: str)``: sent by the
  ``acquire_task_lock`` tool before anything else, when a client asks for a task's lock.
  Locks knows no tasks, so the app that does answers: contexts refuses a task it does not
  hold (E1610). Direct callers of ``acquire_lock`` (in-process code and tests) are not
  asked.
- ``lock_requested(sender, task_id: str, session_id: str)``: sent before a session takes
  a task lock (``acquire_lock``), nothing written yet. A receiver may refuse the lock by
  raising ``OrchestratorError`` (sessions: a paused session takes no new work, E1633).
"""

from django.dispatch import Signal

lock_asked_for = Signal()
lock_requested = Signal()
