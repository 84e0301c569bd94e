"""The spec's context_conflicts table (5.2.6)."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from orchestrator.db import spec_table


class ContextConflict(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    task_a_id = models.CharField(max_length=255)
    task_b_id = models.CharField(max_length=255, null=True, blank=True)
    conflict_type = models.CharField(max_length=50)
    description = models.TextField()
    severity = models.CharField(max_length=20)
    strength = models.DecimalField(max_digits=3, decimal_places=2, null=True, blank=True)
    evidence = models.JSONField(null=True, blank=True)
    resolution_status = models.CharField(max_length=50, null=True, db_default="unresolved")
    resolution = models.JSONField(null=True, blank=True)
    resolved_by = models.CharField(max_length=255, null=True, blank=True)
    detected_at = models.DateTimeField(null=True, db_default=Now())
    resolved_at = models.DateTimeField(null=True, blank=True)
    detected_by = models.CharField(max_length=100, null=True, blank=True)
    detection_method = models.CharField(max_length=255, null=True, blank=True)

    class Meta:
        db_table = spec_table("context_conflicts")
        ordering = ["-detected_at"]

    def __str__(self) -> str:
        return f"{self.conflict_type} {self.task_a_id}/{self.task_b_id or '-'}"


class TaskLockHint(models.Model):
    """"This task may hold a live lock until ``held_until``": written (and committed)
    before every lock acquisition or renewal sets the Redis key.

    The write path reads it in the statement that updates the task, so a save of a task
    that has had no lock lately makes no Redis round trip for the lock rule; while a hint
    is current, the lock key in Redis is checked as before. A hint outlives its lock (it
    is never shortened, only left to pass), which costs a check, never a wrong answer.
    """

    task_id = models.CharField(max_length=255, primary_key=True)
    held_until = models.DateTimeField()

    class Meta:
        db_table = "conflicts_task_lock_hint"

    def __str__(self) -> str:
        return f"{self.task_id} until {self.held_until}"
