"""Signals other apps listen to, so that locks need not know they exist.

- ``lock_requested(sender, task_id: str, session_id: str)``: sent before a session takes
  a task lock (``acquire_lock``), nothing written yet. A receiver may refuse the lock by
  raising ``OrchestratorError`` (sessions: a paused session takes no new work, E1633).
"""

from django.dispatch import Signal

lock_requested = Signal()
