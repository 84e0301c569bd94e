"""Signals other apps listen to; sent by the context services AFTER the transaction commits.

- ``task_changed(sender, task_id: str, change_type: str)``: a task was created, saved,
  rolled back or switched to/from (the graph app keeps its Task node in step).
- ``task_switched(sender, session_id: str | None, from_task_id: str | None,
  to_task_id: str)``: switch_task completed (the graph app records WORKS_ON).
"""

from django.dispatch import Signal

task_changed = Signal()
task_switched = Signal()
