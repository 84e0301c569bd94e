"""The spec's task_contexts, context_versions, checkpoints and global_context.

Tables, defaults, indexes and triggers are created by raw SQL in the migration exactly as
the spec's DDL has them (other programs read and write these tables); the models mirror them,
with ``db_default`` so ORM inserts leave defaults to the database.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models.functions import Now

from foundation.core.db import internal_schema, spec_table
from foundation.core.projects import default_project


class TaskContext(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    task_id = models.CharField(max_length=255, unique=True)
    # The project the task belongs to (foundation.core.models.Project); never changes.
    project_id = models.CharField(max_length=255, default=default_project)
    name = models.CharField(max_length=500)
    description = models.TextField(null=True, blank=True)
    agent_type = models.CharField(max_length=100, null=True, blank=True)
    status = models.CharField(max_length=50, null=True, db_default="pending")
    priority = models.IntegerField(null=True, db_default=50)
    current_phase = models.CharField(max_length=255, null=True, blank=True)
    iteration = models.IntegerField(null=True, db_default=0)
    score = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    locked_elements = models.JSONField(null=True, db_default=models.Value([], models.JSONField()))
    immediate_context = models.JSONField(null=True, blank=True)
    key_files = models.JSONField(null=True, blank=True)
    technical_decisions = models.JSONField(null=True, blank=True)
    resume_prompt = models.TextField(null=True, blank=True)
    keywords = models.JSONField(null=True, blank=True)
    token_estimate = models.IntegerField(null=True, blank=True)
    created_at = models.DateTimeField(null=True, db_default=Now())
    updated_at = models.DateTimeField(null=True, db_default=Now())
    last_session_at = models.DateTimeField(null=True, blank=True)
    version = models.IntegerField(null=True, db_default=1)

    class Meta:
        db_table = spec_table("task_contexts")
        ordering = ["-priority", "task_id"]

    def __str__(self) -> str:
        return f"{self.task_id}: {self.name}"


class ContextVersion(models.Model):
    """Written only by the save_context_version trigger; immutable at the database level."""

    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    task_id = models.CharField(max_length=255)
    project_id = models.CharField(max_length=255)  # the task's, set by the trigger
    version = models.IntegerField()
    snapshot = models.JSONField()
    change_summary = models.TextField(null=True, blank=True)
    change_type = models.CharField(max_length=50, null=True, blank=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    session_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(null=True, db_default=Now())

    class Meta:
        db_table = spec_table("context_versions")
        ordering = ["task_id", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["task_id", "version"],
                                    name="context_versions_task_id_version_key"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id} v{self.version}"


class Checkpoint(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    checkpoint_id = models.CharField(max_length=255, unique=True)
    label = models.CharField(max_length=500)
    description = models.TextField(null=True, blank=True)
    checkpoint_type = models.CharField(max_length=50, null=True, db_default="manual")
    project_id = models.CharField(max_length=255, default=default_project)
    task_id = models.CharField(max_length=255, null=True, blank=True)
    scope = models.CharField(max_length=50)
    included_tasks = models.JSONField(null=True, db_default=models.Value([], models.JSONField()))
    snapshot = models.JSONField()
    es_memory_id = models.CharField(max_length=255, null=True, blank=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    session_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(null=True, db_default=Now())

    class Meta:
        db_table = spec_table("checkpoints")
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.checkpoint_id} ({self.label})"


class GlobalContext(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    project_id = models.CharField(max_length=255, unique=True)
    project_name = models.CharField(max_length=500)
    description = models.TextField(null=True, blank=True)
    hard_rules = models.JSONField(null=True, db_default=models.Value([], models.JSONField()))
    tech_stack = models.JSONField(null=True, db_default=models.Value([], models.JSONField()))
    key_paths = models.JSONField(null=True, db_default=models.Value({}, models.JSONField()))
    services = models.JSONField(null=True, db_default=models.Value({}, models.JSONField()))
    active_task_id = models.CharField(max_length=255, null=True, blank=True)
    orchestrator_context = models.JSONField(null=True,
                                            db_default=models.Value({}, models.JSONField()))
    created_at = models.DateTimeField(null=True, db_default=Now())
    updated_at = models.DateTimeField(null=True, db_default=Now())
    version = models.IntegerField(null=True, db_default=1)

    class Meta:
        db_table = spec_table("global_context")
        verbose_name_plural = "global context"

    def __str__(self) -> str:
        return self.project_id


class GlobalContextVersion(models.Model):
    """Written only by the save_global_context_version trigger (migration 0002); immutable.

    Like context_versions for tasks: one row per version of the global_context row, with
    the whole row as ``snapshot``. Keyed by the row's id (``context_id``), so a project row
    that is deleted and created again starts a history of its own.
    """

    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    context_id = models.UUIDField()
    project_id = models.CharField(max_length=255)
    version = models.IntegerField()
    snapshot = models.JSONField()
    change_summary = models.TextField(null=True, blank=True)
    change_type = models.CharField(max_length=50, null=True, blank=True)
    created_by = models.CharField(max_length=255, null=True, blank=True)
    session_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(null=True, db_default=Now())

    class Meta:
        # In the internal schema: MCP_SCHEMA holds exactly the spec's seven tables.
        db_table = f'{internal_schema(settings.MCP_SCHEMA)}"."global_context_versions'
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["context_id", "version"],
                                    name="global_context_versions_context_version_key"),
        ]

    def __str__(self) -> str:
        return f"{self.project_id} v{self.version}"


class CriticalKeys(models.Model):
    """The context keys of a task marked critical (``mark_critical``): kept
    whole in every context bundle whatever the budget (contexts.services.critical).

    Beside task_contexts, not a column of it: the spec's table has fixed columns that
    other programs read, and a mark says what must survive a small budget, not what the
    task holds, so it is neither versioned nor undone by a rollback."""

    task_id = models.CharField(max_length=255, primary_key=True)
    project_id = models.CharField(max_length=255)
    keys = models.JSONField(default=list)
    updated_by = models.CharField(max_length=255, null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = f'{internal_schema(settings.MCP_SCHEMA)}"."task_critical_keys'

    def __str__(self) -> str:
        return f"{self.task_id}: {', '.join(self.keys or [])}"


class CheckpointDetails(models.Model):
    """What the server knows about a checkpoint beside its row: its tags, the agent that
    made it and its status, ``active``, ``archived`` (kept, set aside by an operator) or
    ``corrupt`` (its snapshot no longer matches its checksum: the periodic check,
    contexts.services.checkpoint_check, says so).

    Beside checkpoints, not columns of it: the spec's table has fixed columns that other
    programs read, and the status is the server's verdict on the row, not its content. A
    checkpoint without a row here (made before this table) is active, untagged. No foreign
    key (other programs may truncate the spec's table): the checkpoint check removes the
    rows of checkpoints that are gone, and every reader joins from the checkpoint."""

    ACTIVE, ARCHIVED, CORRUPT = "active", "archived", "corrupt"
    STATUSES = (ACTIVE, ARCHIVED, CORRUPT)

    checkpoint_id = models.CharField(max_length=255, primary_key=True)
    project_id = models.CharField(max_length=255)
    tags = models.JSONField(default=list)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    status = models.CharField(max_length=20, default=ACTIVE,
                              choices=[(s, s) for s in STATUSES])
    status_reason = models.TextField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = f'{internal_schema(settings.MCP_SCHEMA)}"."checkpoint_details'
        verbose_name_plural = "checkpoint details"

    def __str__(self) -> str:
        return f"{self.checkpoint_id}: {self.status}"


class ProjectLearning(models.Model):
    """What a session learned and left for the project's next sessions (end_session's
    ``learnings``): shown in the WARM tier of
    every context bundle of the project (contexts.services.bundle), newest first.

    Beside the shared tables: a learning belongs to the project, not to a task version,
    so a rollback does not undo it. Kept whole (no retention): they are short and few."""

    project_id = models.CharField(max_length=255)
    text = models.TextField()
    session_id = models.CharField(max_length=255, null=True, blank=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = f'{internal_schema(settings.MCP_SCHEMA)}"."project_learnings'
        indexes = [models.Index(fields=["project_id", "-id"], name="project_learning_recent")]

    def __str__(self) -> str:
        return f"{self.project_id}: {self.text[:60]}"
