"""Timestamps as the API writes them: ISO 8601 in UTC with a ``Z``."""

from __future__ import annotations

from datetime import datetime
from typing import overload

from django.utils import timezone


@overload
def iso(value: datetime, *, timespec: str = "auto") -> str: ...
@overload
def iso(value: datetime | None, *, timespec: str = "auto") -> str | None: ...
def iso(value: datetime | None, *, timespec: str = "auto") -> str | None:
    """``value`` as ISO 8601 with ``Z`` for UTC; None stays None."""
    return value.isoformat(timespec=timespec).replace("+00:00", "Z") if value else None


def now_iso() -> str:
    return timezone.now().isoformat(timespec="auto").replace("+00:00", "Z")
