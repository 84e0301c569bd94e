"""The spec's active_sessions table and the session app's own tables.

``ActiveSession`` mirrors the spec DDL (created by raw SQL in 0001, never altered). What
the spec table has no column for lives in ordinary Django tables in the public schema,
keyed by the session's ``session_id`` string (no foreign key across schemas, so other
programs may insert sessions the spec way and still be served):

- ``SessionDetail``: agent/process ownership, the compaction count, the event-sequence
  counter and the scratchpad.
- ``ToolInvocation``: automatic tool history (mirrored to ``.tool-history.json``).
- ``SessionEvent``: the append-only event log, immutable by trigger.
- ``SessionHandoff``: one active handoff note per project.
"""

from __future__ import annotations

from django.db import models
from django.db.models.functions import Now

from foundation.core.db import spec_table
from foundation.core.projects import default_project


class ActiveSession(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    session_id = models.CharField(max_length=255, unique=True)
    project_id = models.CharField(max_length=255, default=default_project)
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
        # The table keeps the spec's name; people read "Sessions": every row is a session of
        # any state, and "Active sessions" made ended and crashed ones sound running.
        verbose_name = "session"
        verbose_name_plural = "sessions"

    def __str__(self) -> str:
        return self.session_id


class SessionDetail(models.Model):
    session_id = models.CharField(max_length=255, primary_key=True)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    process_id = models.IntegerField(null=True, blank=True)
    compaction_count = models.IntegerField(default=0)
    # Last event sequence handed out; bumped with UPDATE ... RETURNING in the append's
    # transaction, so the row lock serialises appends and a rollback leaves no gap.
    event_count = models.IntegerField(default=0)
    scratchpad = models.JSONField(default=dict)
    scratchpad_updated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    # Compactions completed (complete_compaction): compaction_count above it is one
    # reported (report_compaction) and not finished yet.
    compactions_completed = models.IntegerField(db_default=0)
    # A pause (pause_session / resume_session): set while paused. A paused
    # session expects no heartbeats and is never marked crashed; its status stays live.
    paused_at = models.DateTimeField(null=True, blank=True)
    pause_reason = models.CharField(max_length=20, null=True, blank=True)
    pause_remaining_percent = models.FloatField(null=True, blank=True)
    pause_resets_at = models.DateTimeField(null=True, blank=True)
    resume_count = models.IntegerField(db_default=0)
    # What runs the session and for what (start_session): the kind of agent
    # (claude-code, codex, gemini, ...), the workflow and skill it runs,
    # and a small metadata object; get_active_session finds the live session by them.
    agent_kind = models.CharField(max_length=64, null=True, blank=True)
    workflow = models.CharField(max_length=200, null=True, blank=True)
    skill = models.CharField(max_length=200, null=True, blank=True)
    metadata = models.JSONField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["pause_resets_at"], name="session_detail_paused",
                                condition=models.Q(paused_at__isnull=False)),
                   models.Index(fields=["agent_kind"], name="session_detail_agent_kind",
                                condition=models.Q(agent_kind__isnull=False)),
                   models.Index(fields=["workflow"], name="session_detail_workflow",
                                condition=models.Q(workflow__isnull=False))]

    def __str__(self) -> str:
        return self.session_id


class ToolInvocation(models.Model):
    session_id = models.CharField(max_length=255)
    tool = models.CharField(max_length=100)
    success = models.BooleanField()
    error_code = models.CharField(max_length=10, null=True, blank=True)
    transport = models.CharField(max_length=20, blank=True, default="")
    duration_ms = models.FloatField(default=0)
    timestamp = models.DateTimeField(db_default=Now())
    # What a hook-reported tool use did ("Edit src/app.py"); shown in resume prompts.
    summary = models.CharField(max_length=500, null=True, blank=True)
    # The session's project, copied by the insert: a project's mirror file reads its last
    # calls by this index (history.write_mirror).
    project_id = models.CharField(max_length=255, null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["session_id", "-id"], name="toolinv_session_recent"),
                   models.Index(fields=["project_id", "-id"], name="toolinv_project_recent")]

    def __str__(self) -> str:
        return f"{self.session_id} {self.tool}"


EVENT_TYPES = ("user_message", "model_message", "tool_call", "tool_result", "validation_gate",
               "memory_recall", "system_event")
EVENT_ROLES = ("user", "assistant", "tool", "system")


class SessionEvent(models.Model):
    session_id = models.CharField(max_length=255)
    sequence = models.IntegerField()
    event_type = models.CharField(max_length=30, choices=[(t, t) for t in EVENT_TYPES])
    role = models.CharField(max_length=20, choices=[(r, r) for r in EVENT_ROLES])
    content = models.TextField()
    parts = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        ordering = ["session_id", "sequence"]
        constraints = [models.UniqueConstraint(fields=["session_id", "sequence"],
                                               name="session_event_sequence_unique")]
        indexes = [models.Index(fields=["session_id", "event_type", "sequence"],
                                name="session_event_type_seq"),
                   # The overview counts the edits the file policy refused lately.
                   models.Index(fields=["created_at"], name="session_event_edit_blocked",
                                condition=models.Q(content="edit_blocked"))]

    def __str__(self) -> str:
        return f"{self.session_id}#{self.sequence} {self.event_type}"


class SessionHandoff(models.Model):
    id = models.UUIDField(primary_key=True, db_default=models.Func(function="gen_random_uuid"),
                          editable=False)
    project_id = models.CharField(max_length=255, default=default_project)
    # The directory of the session that left it (shown; the project is what counts).
    project_dir = models.CharField(max_length=1000, null=True, blank=True)
    from_session_id = models.CharField(max_length=255)
    from_agent = models.CharField(max_length=255, null=True, blank=True)
    summary = models.TextField()
    open_items = models.JSONField(default=list)
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(db_default=Now())
    # First read by a starting session; the note stays active until the next end_session
    # of the project replaces it, so parallel sessions all see it.
    consumed_at = models.DateTimeField(null=True, blank=True)
    consumed_by_session_id = models.CharField(max_length=255, null=True, blank=True)
    last_confirmed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [models.UniqueConstraint(fields=["project_id"],
                                               condition=models.Q(active=True),
                                               name="one_active_handoff_per_project")]
        indexes = [models.Index(fields=["project_id", "-created_at"],
                                name="handoff_project_recent")]

    def __str__(self) -> str:
        return f"{self.project_id} from {self.from_session_id}"


class SessionWork(models.Model):
    """Which session worked on which task, since when, and as which agent.

    The source of truth for the graph's Session-WORKS_ON->Task and session
    Agent-HANDLES->Task edges, and what the Postgres backend answers
    focus.recentSessions and focus.agents from, so both backends give one answer. Rows
    are written in the transaction that starts the work (start_session with a task,
    switch_task with a session), or by the statement after the UPDATE of a heartbeat that
    changes task; rows of sessions that no longer exist are ignored by readers and
    pruned by sync_graph.
    """

    session_id = models.CharField(max_length=255)
    project_id = models.CharField(max_length=255, default=default_project)
    task_id = models.CharField(max_length=255)
    agent_id = models.CharField(max_length=255, null=True, blank=True)
    started_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "agent_sessions_sessionwork"
        constraints = [
            models.UniqueConstraint(fields=["session_id", "task_id"],
                                    name="session_work_session_task_key"),
        ]
        indexes = [models.Index(fields=["project_id", "task_id", "-started_at"],
                                name="session_work_task_idx")]

    def __str__(self) -> str:
        return f"{self.session_id} -> {self.task_id}"


class SessionNotice(models.Model):
    """Something to tell a session's agent in its next hook answer that can carry context
    (another session began editing a file this one holds, a conflict was recorded):
    written by any app, taken once (``delivered_at``) by the session's next flush."""

    session_id = models.CharField(max_length=255)
    project_id = models.CharField(max_length=255, default=default_project)
    kind = models.CharField(max_length=50)
    text = models.TextField()
    created_at = models.DateTimeField(db_default=Now())
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["session_id"], name="session_notice_pending",
                                condition=models.Q(delivered_at__isnull=True))]

    def __str__(self) -> str:
        return f"{self.session_id}: {self.kind}"
