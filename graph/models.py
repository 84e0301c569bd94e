"""The spec's task_relationships table: the source of truth for task-to-task edges."""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from foundation.core.db import spec_table
from foundation.core.projects import default_project


class TaskRelationship(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    project_id = models.CharField(max_length=255, default=default_project)
    source_task_id = models.CharField(max_length=255)
    target_task_id = models.CharField(max_length=255)
    relationship_type = models.CharField(max_length=50)
    metadata = models.JSONField(null=True, db_default=models.Value({}, models.JSONField()))
    strength = models.DecimalField(max_digits=3, decimal_places=2, null=True, blank=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(null=True, db_default=Now())

    class Meta:
        db_table = spec_table("task_relationships")
        constraints = [
            models.UniqueConstraint(
                fields=["source_task_id", "target_task_id", "relationship_type"],
                name="task_relationships_source_task_id_target_task_id_relations_key",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source_task_id} -{self.relationship_type}-> {self.target_task_id}"


class GraphOutboxEntry(models.Model):
    """One change the graph mirror has not applied yet (the transactional outbox).

    Rows are written by triggers on task_contexts, active_sessions and agent_sessions_sessionwork
    (sessions.SessionWork; migration 0003), so they commit or roll back with the change
    itself, whoever makes it, and a save never talks to the graph server. A row names
    WHAT changed, not how: the drainer (graph.services.outbox) reads the current Postgres
    state of that task, session or work record and writes it to the graph, so rows can be
    applied late, repeatedly or several at once and the mirror still converges on Postgres.
    """

    kind = models.CharField(max_length=16)  # 'task', 'session' or 'work'
    entity_id = models.CharField(max_length=255)  # the task id or the session id
    task_id = models.CharField(max_length=255, null=True, blank=True)  # of a work record
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "graph_outbox"
        verbose_name_plural = "graph outbox entries"

    def __str__(self) -> str:
        return f"{self.kind} {self.entity_id}" + (f" -> {self.task_id}" if self.task_id else "")
