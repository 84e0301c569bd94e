from django.db import models

from foundation.core.projects import default_project


class TaskLockHint(models.Model):
    """"This task may hold a live lock until ``held_until``": written (and committed)
    before every lock acquisition or renewal sets the Redis key.

    The write path reads it in the statement that updates the task, so a save of a task
    that has had no lock lately makes no Redis round trip for the lock rule; while a hint
    is current, the lock key in Redis is checked as before. A hint outlives its lock (it
    is never shortened, only left to pass), which costs a check, never a wrong answer.
    """

    task_id = models.CharField(max_length=255, primary_key=True)
    project_id = models.CharField(max_length=255, default=default_project)
    held_until = models.DateTimeField()

    class Meta:
        db_table = "locks_task_lock_hint"
        indexes = [models.Index(fields=["project_id", "held_until"],
                                name="lock_hint_project_until")]

    def __str__(self) -> str:
        return f"{self.task_id} until {self.held_until}"
