"""What state a session is in, in words a person reads: one rule for every console page.

The stored ``status`` alone misleads: a paused session keeps status ``active`` (it expects
no heartbeats and is never marked crashed), and a live session whose heartbeat is older
than the crash threshold is still ``active`` until the crash detector's next run. So the
console judges a session by its status, its pause and its heartbeat's age against
CRASH_THRESHOLD_MINUTES (the detector's own threshold):

- ``paused``: live and paused (pause_session); its heartbeat age is not judged.
- ``crashed``: marked crashed and not yet recovered (recovery_needed).
- ``overdue``: live, heartbeat at or past the crash threshold: the detector will mark it
  crashed on its next run.
- ``late``: live, heartbeat past half the threshold (two heartbeats missed at the default
  one-minute interval against five minutes).
- ``live``: live, heartbeat fresh.
- ``ended`` / ``recovered``: finished (recovered: a crash someone marked recovered).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings

LIVE_STATUSES = ("active", "compacted")
# Share of the crash threshold after which a live heartbeat counts as late.
LATE_SHARE = 0.5

MEANINGS = {
    "live": "working: heartbeat fresh",
    "late": "heartbeat late: past half the crash threshold",
    "overdue": "heartbeat past the crash threshold: about to be marked crashed",
    "paused": "paused on purpose: no heartbeat expected",
    "crashed": "crashed: needs recovery",
    "ended": "ended normally",
    "recovered": "crashed, then marked recovered",
}
NEEDS_PERSON = ("crashed", "overdue")


def crash_threshold_seconds() -> float:
    return float(settings.CRASH_THRESHOLD_MINUTES) * 60


def heartbeat_judgement(age_seconds: float | None) -> str:
    """``fresh``, ``late`` or ``overdue`` against the crash threshold (``unknown``: none)."""
    if age_seconds is None:
        return "unknown"
    threshold = crash_threshold_seconds()
    if age_seconds >= threshold:
        return "overdue"
    return "late" if age_seconds >= threshold * LATE_SHARE else "fresh"


@dataclass(frozen=True)
class SessionState:
    state: str
    meaning: str
    heartbeat: str  # fresh / late / overdue / unknown / not judged (paused, finished)
    heartbeat_age_seconds: int | None

    @property
    def needs_person(self) -> bool:
        return self.state in NEEDS_PERSON


def session_state(status: str | None, recovery_needed: bool | None,
                  last_heartbeat: datetime | None, paused_at: datetime | None,
                  now: datetime) -> SessionState:
    age = int((now - last_heartbeat).total_seconds()) if last_heartbeat else None
    if status in LIVE_STATUSES:
        if paused_at is not None:
            state, judged = "paused", "not judged"
        else:
            judged = heartbeat_judgement(age)
            state = {"overdue": "overdue", "late": "late"}.get(judged, "live")
    elif recovery_needed:
        state, judged = "crashed", "not judged"
    elif status == "recovered":
        state, judged = "recovered", "not judged"
    elif status == "crashed":  # crashed and already recovered by a file-mode record
        state, judged = "crashed", "not judged"
    else:
        state, judged = "ended", "not judged"
    return SessionState(state, MEANINGS[state], judged, age)
