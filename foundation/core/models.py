from __future__ import annotations

import hashlib
import secrets

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do: read calls only read-only tools; write calls every tool on its
    own sessions; admin also writes other tokens' sessions; metrics only reads /metrics (a
    Prometheus scraper: every project's figures, no tool, no browsing)."""

    READ = "read"
    WRITE = "write"
    ADMIN = "admin"
    METRICS = "metrics"


class Project(models.Model):
    """A repository (or any body of work) this server coordinates. Its tasks, sessions,
    conflicts, locks, handoffs and global context belong to it, and nothing pairs across
    two projects. The default project (MCP_PROJECT_ID) holds whatever names none."""

    # The project's key: letters, digits, . _ : - (it names Redis keys and directories).
    id = models.CharField(max_length=200, primary_key=True)
    name = models.CharField(max_length=500)
    created_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "projects"
        ordering = ["id"]

    def __str__(self) -> str:
        return self.id


class ApiToken(models.Model):
    """A bearer token for REST and MCP clients. Only its sha256 is stored."""

    name = models.CharField(max_length=100, unique=True)
    # Tokens issued before scopes existed become write tokens: what they could already do,
    # except writing sessions other tokens started.
    scope = models.CharField(max_length=10, choices=TokenScope.choices,
                             default=TokenScope.WRITE)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False,
                              help_text="First characters, to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)
    # The projects the token may reach; empty: every project (tokens made before projects
    # existed keep what they could do).
    projects = ArrayField(models.CharField(max_length=200), default=list, blank=True)

    class Meta:
        db_table = "orchestrator_api_token"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @classmethod
    def issue(cls, name: str, scope: str = TokenScope.WRITE,
              projects: list[str] | None = None) -> tuple[ApiToken, str]:
        raw = "orch_" + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, token_hash=hash_token(raw), prefix=raw[:12],
                                   scope=scope, projects=sorted(set(projects or [])))
        return token, raw


class EnrollmentCode(models.Model):
    """A code an operator hands to a developer's machine (issue 36): ``orchestrator-agent
    setup --enroll CODE`` exchanges it for a token of the machine's own, limited to the
    code's project (``foundation.core.enrollment``). Only its sha256 is stored, like a
    token's; it works ``max_uses`` times and never after ``expires_at``."""

    code_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False,
                              help_text="First characters, to tell codes apart")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    max_uses = models.PositiveIntegerField(default=1)
    uses = models.PositiveIntegerField(default=0)
    expires_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)
    created_by = models.CharField(max_length=150, blank=True, default="")
    last_used_at = models.DateTimeField(null=True, blank=True)
    # The tokens it issued, by name (each is an ApiToken, listed and revocable with them).
    issued = ArrayField(models.CharField(max_length=100), default=list, blank=True)

    class Meta:
        db_table = "orchestrator_enrollment_code"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… for {self.project_id}"


class SessionOwner(models.Model):
    """Which token started a session: only that token, or an admin token,
    may write the session afterwards. Sessions started by people or jobs have no row and
    stay writable by any write token. Kept here, beside the tokens, so the access check
    in the tool registry needs nothing from the sessions app."""

    session_id = models.CharField(max_length=255, primary_key=True)
    token_name = models.CharField(max_length=100)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "orchestrator_session_owner"

    def __str__(self) -> str:
        return f"{self.session_id} -> {self.token_name}"
class JobRun(models.Model):
    """One run of a periodic job (crash sweep, hot sync, ...), written by ``record_job_run``.

    The console's overview reads the latest run of each job to show whether beat is alive;
    only the newest ``jobruns.KEPT_RUNS`` runs of each job are kept.
    """

    RUNNING, OK, FAILED = "running", "ok", "failed"

    job_name = models.CharField(max_length=100)
    started_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=10, default=RUNNING,
                               choices=[(o, o) for o in (RUNNING, OK, FAILED)])
    summary = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        db_table = "orchestrator_job_run"
        ordering = ["-id"]
        indexes = [models.Index(fields=["job_name", "-id"], name="jobrun_name_recent")]

    def __str__(self) -> str:
        return f"{self.job_name} {self.outcome} at {self.started_at:%Y-%m-%d %H:%M:%S}"


class ReplayedCall(models.Model):
    """A tool call that was held in a file while Postgres was unreachable (a save in
    RECOVERY_DIR/.pending-saves.json) and has since been applied: its id, written in the
    transaction that applies it, so that a replay run again (a crash before the file was
    rewritten, two replays at once) applies each held call exactly once. Small rows, one
    per held call: kept, as the record of what an outage held."""

    call_id = models.CharField(max_length=100, primary_key=True)
    tool = models.CharField(max_length=100)
    held_at = models.DateTimeField(null=True, blank=True)
    applied_at = models.DateTimeField(db_default=Now())

    class Meta:
        db_table = "orchestrator_replayed_call"

    def __str__(self) -> str:
        return self.call_id

    @classmethod
    def mark_applied(cls, call_id: str, tool: str, held_at: str | None) -> bool:
        """Record a held call as applied, inside the caller's transaction that applies it;
        False when it was already (another replay did it: skip the call)."""
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {cls._meta.db_table} (call_id, tool, held_at, applied_at) "
                "VALUES (%s, %s, %s, now()) ON CONFLICT DO NOTHING RETURNING 1",
                [call_id, tool, held_at])
            return cursor.fetchone() is not None
