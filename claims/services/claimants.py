"""Who is claiming: the session, its project, repository root and edit policy, and
the limits of a claim."""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import connection

from claims.models import FileClaim
from contexts.services.edit_policy import POLICY_KEY, EditPolicy, policy_from
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, session_not_found
from sessions.models import SessionDetail
from sessions.services.common import LIVE_STATUSES, refuse_for_status
from sessions.services.pause import paused_refusal

CLAIMS_TABLE = FileClaim._meta.db_table
MAX_PATHS = 100
MAX_PATH_LENGTH = 1000
MIN_TTL_SECONDS, MAX_TTL_SECONDS = 30, 86400


def ttl_default() -> int:
    return settings.FILE_CLAIM_TTL_SECONDS


def live_seconds() -> float:
    return float(settings.CRASH_THRESHOLD_MINUTES) * 60


# -- who is claiming ------------------------------------------------------------------------

@dataclass
class Claimant:
    session_id: str
    project_id: str
    task_id: str | None
    root: str
    agent_id: str | None
    policy: EditPolicy


# session id -> (project, repository root, the project's fileClaims as stored, its policy),
# as claimant() last read them: what the one-round-trip claim (_claim_at_once) needs to
# know before it is sent. A session's project and root never change; the policy can, so
# that statement checks it is still the one cached (else the claim takes the long way,
# which reads it again). Per process, bounded: cleared when full.
claimant_cache: dict[str, tuple[str, str, str | None, EditPolicy]] = {}
CACHED_CLAIMANTS = 20000


_CLAIMANT = ("SELECT s.status, s.project_id, s.task_id, s.project_dir, d.agent_id, "
             "g.orchestrator_context, d.paused_at, d.pause_reason, d.pause_resets_at "
             f"FROM {qualified('active_sessions')} s "
             f"LEFT JOIN {SessionDetail._meta.db_table} d ON d.session_id = s.session_id "
             f"LEFT JOIN {qualified('global_context')} g ON g.project_id = s.project_id "
             "WHERE s.session_id = %s")


def claimant(session_id: str, *, source: str = "tool") -> Claimant:
    """The session with its project's policy; E1600 unknown, E1602 / E1603 not live,
    E1633 paused (a paused session claims no new files; the claims a hook
    flush makes for edits already done are kept, ``source`` "activity")."""
    rows = prepared.fetch_all(_CLAIMANT, [session_id])  # prepared: planning cost the most
    row = rows[0] if rows else None
    if row is None:
        raise session_not_found(session_id)
    status = row[0] or "active"
    if status not in LIVE_STATUSES:
        raise refuse_for_status(session_id, status, action="claiming files")
    if row[6] is not None and source != "activity":
        raise paused_refusal(session_id, row[7], row[8], action="claiming files")
    stored = _json(row[5])
    who = Claimant(session_id, row[1], row[2], (row[3] or "").rstrip("/"), row[4],
                   policy_from(stored))
    if len(claimant_cache) >= CACHED_CLAIMANTS:
        claimant_cache.clear()
    raw = stored.get(POLICY_KEY) if isinstance(stored, dict) else None
    claimant_cache[session_id] = (who.project_id, who.root,
                                  None if raw is None else json.dumps(raw), who.policy)
    return who


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def repository_path(path: str, root: str, *, field_name: str = "paths") -> str:
    """``path`` relative to the session's repository root when it is under it, normalised
    (``./a/../b`` is ``b``); E1612 for a relative path that leaves the repository."""
    text = path.strip().replace("\\", "/")
    if "\x00" in text:
        raise OrchestratorError("E1612", f"{field_name}: a path must not hold a NUL character",
                                {"field": field_name})
    if not text:
        raise OrchestratorError("E1612", f"{field_name}: a path must not be empty",
                                {"field": field_name})
    if text.startswith("/"):
        if root and (text == root or text.startswith(root + "/")):
            text = text[len(root) + 1:] or "."
        else:
            return posixpath.normpath(text)
    normal = posixpath.normpath(text)
    if normal == ".." or normal.startswith("../"):
        raise OrchestratorError("E1612", f"{field_name}: {path!r} leaves the repository",
                                {"field": field_name, "value": path[:200]})
    if normal == ".":
        raise OrchestratorError("E1612", f"{field_name}: {path!r} names the repository "
                                "itself, not a file", {"field": field_name,
                                                       "value": path[:200]})
    return normal


def claimant_any(session_id: str) -> tuple[str, str]:
    """(project, root) of a session in any status (releasing is allowed after its end)."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT project_id, project_dir FROM {qualified('active_sessions')} "
                       "WHERE session_id = %s", [session_id])
        row = cursor.fetchone()
    if row is None:
        raise session_not_found(session_id)
    return row[0], (row[1] or "").rstrip("/")
