"""The spec's active_sessions table (5.2.3)."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from orchestrator.db import spec_table


class ActiveSession(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    session_id = models.CharField(max_length=255, unique=True)
    task_id = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(max_length=50, null=True, db_default="active")
    started_at = models.DateTimeField(null=True, db_default=Now())
    last_heartbeat = models.DateTimeField(null=True, db_default=Now())
    ended_at = models.DateTimeField(null=True, blank=True)
    context_snapshot = models.JSONField(null=True, blank=True)
    recovery_needed = models.BooleanField(null=True, db_default=False)
    recovery_type = models.CharField(max_length=50, null=True, blank=True)
    conversation_summary = models.TextField(null=True, blank=True)
    unsaved_changes = models.JSONField(null=True, blank=True)
    project_dir = models.CharField(max_length=1000, null=True, blank=True)
    git_branch = models.CharField(max_length=255, null=True, blank=True)

    class Meta:
        db_table = spec_table("active_sessions")
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return self.session_id
