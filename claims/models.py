from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models.functions import Now

from foundation.core.projects import default_project


class FileClaim(models.Model):
    """A session is editing ``path`` (relative to its repository's root) for its task.

    Held while the session is live (status active or compacted, heartbeat younger than the
    crash threshold), not released, and ``expires_at`` (the last edit plus the claim's TTL)
    is ahead; a claim of a live session that expired lately still counts as "recently
    held". A session's end or crash ends its claims at once: every reader joins the
    session. ``known_sessions``: other sessions whose overlap with this claim its holder
    has already been told about (warned or sent a notice), so each overlap is said once.
    """

    project_id = models.CharField(max_length=255, default=default_project)
    path = models.CharField(max_length=1000)
    session_id = models.CharField(max_length=255)
    task_id = models.CharField(max_length=255, null=True, blank=True)
    # tool: claim_files (the hook's check before an edit, or an agent); activity: a flush's edits
    source = models.CharField(max_length=20)
    claimed_at = models.DateTimeField(db_default=Now())
    touched_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()
    released_at = models.DateTimeField(null=True, blank=True)
    known_sessions = ArrayField(models.CharField(max_length=255), default=list)
    # Other sessions whose held claim on this path this claim overlaps, whose file
    # conflict and notice are still to be recorded (just after the claim's answer, off
    # its path: claims.services.overlaps.record_overlaps).
    overlaps_pending = ArrayField(models.CharField(max_length=255), default=list)

    class Meta:
        db_table = "file_claims"
        ordering = ["path", "-touched_at"]
        constraints = [models.UniqueConstraint(fields=["session_id", "path"],
                                               name="file_claim_session_path_key")]
        indexes = [models.Index(fields=["project_id", "path"], name="file_claim_project_path"),
                   models.Index(fields=["project_id", "task_id"], name="file_claim_project_task")]

    def __str__(self) -> str:
        return f"{self.path} by {self.session_id}"
