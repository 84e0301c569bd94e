"""Notices: short notes for a session's agent, delivered by its next hook answer that can
carry context (Claude Code's PostToolUse and UserPromptSubmit; the claim check before an
edit). Another app writes them (``add_notices``) about something the agent did not ask
about: another session began editing a file it holds, a file conflict was recorded.
``take_notices`` hands the pending ones out once, oldest first."""

from __future__ import annotations

from django.db import connection

from foundation.core import prepared
from foundation.core.db import async_commit_sql
from sessions.models import SessionNotice

NOTICES_TABLE = SessionNotice._meta.db_table
# A flush carries at most this many; the rest wait for the next one.
NOTICES_PER_ANSWER = 20
MAX_NOTICE_CHARS = 2000


def add_notices(notices: list[tuple[str, str, str, str]]) -> None:
    """(session id, project id, kind, text) rows, in one statement."""
    if not notices:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {NOTICES_TABLE} (session_id, project_id, kind, text, created_at) "
            "SELECT * , now() FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[])",
            [[n[0] for n in notices], [n[1] for n in notices], [n[2] for n in notices],
             [n[3][:MAX_NOTICE_CHARS] for n in notices]])


def take_notices(session_id: str) -> list[str]:
    """The session's pending notices, oldest first, marked delivered (one statement,
    committed asynchronously on its own: a mark lost in a Postgres crash delivers the
    notice again, nothing worse)."""
    # Prepared: Postgres spent longer planning it than running it.
    rows = prepared.fetch_all(
        f"UPDATE {NOTICES_TABLE} SET delivered_at = now() "
        f"FROM {async_commit_sql()} AS commit_mode WHERE id IN ("
        f"SELECT id FROM {NOTICES_TABLE} WHERE session_id = %s AND delivered_at IS NULL "
        "ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED) RETURNING id, text",
        [session_id, NOTICES_PER_ANSWER])
    return [text for _, text in sorted(rows)]
