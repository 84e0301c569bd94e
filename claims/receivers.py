"""Edits a live session's activity reported renew its claims (claims.services.claiming)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from claims.services.claiming import renew_from_activity
from sessions.signals import files_edited


@receiver(files_edited, dispatch_uid="claims.renew_from_activity")
def claim_edited_files(sender: Any, session_id: str, paths: list[str], **kwargs: Any) -> bool:
    """True when a claim was made (it may have left the session a notice)."""
    return renew_from_activity(session_id, paths)
