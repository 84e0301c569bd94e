from __future__ import annotations

import hashlib
import secrets

from django.db import models


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


class ApiToken(models.Model):
    """A bearer token for REST and MCP clients. Only its sha256 is stored."""

    name = models.CharField(max_length=100, unique=True)
    token_hash = models.CharField(max_length=64, unique=True, editable=False)
    prefix = models.CharField(max_length=12, editable=False,
                              help_text="First characters, to tell tokens apart")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked = models.BooleanField(default=False)

    class Meta:
        db_table = "orchestrator_api_token"
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    def save(self, *args, **kwargs) -> None:
        super().save(*args, **kwargs)
        if self.revoked:
            from orchestrator.auth import forget_token

            forget_token(self.token_hash)

    def delete(self, *args, **kwargs):
        from orchestrator.auth import forget_token

        forget_token(self.token_hash)
        return super().delete(*args, **kwargs)

    @classmethod
    def issue(cls, name: str) -> tuple[ApiToken, str]:
        raw = "orch_" + secrets.token_urlsafe(32)
        token = cls.objects.create(name=name, token_hash=hash_token(raw), prefix=raw[:12])
        return token, raw


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
