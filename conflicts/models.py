"""The spec's context_conflicts table."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from foundation.core.db import spec_table
from foundation.core.projects import default_project


class ContextConflict(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    project_id = models.CharField(max_length=255, default=default_project)
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
