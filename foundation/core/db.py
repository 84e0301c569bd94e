"""Helpers for the spec tables living in the MCP_SCHEMA schema, and trigger context."""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.db import OperationalError, connection, transaction

logger = logging.getLogger("orchestrator.db")
T = TypeVar("T")


def spec_table(name: str) -> str:
    """``db_table`` for a spec table: Django quotes it as "schema"."name"."""
    return f'{settings.MCP_SCHEMA}"."{name}'


def qualified(name: str) -> str:
    """The SQL name of a spec table, for raw SQL."""
    return f'"{settings.MCP_SCHEMA}"."{name}"'


def internal_schema(schema: str) -> str:
    """The schema beside ``schema`` holding what is not a spec table (guards, history)."""
    return f"{schema}_internal"


# The versioning trigger's change context (set_change_context's four settings) as an
# expression of four ``%s`` parameters (change type, summary, session, author), for a
# statement that sets it itself, in its FROM, before the rows it writes: one round trip.
CHANGE_CONTEXT_SQL = """set_config('orchestrator.change_type', %s, true)
             || set_config('orchestrator.change_summary', %s, true)
             || set_config('orchestrator.session_id', %s, true)
             || set_config('orchestrator.created_by', %s, true) AS change_context"""


def set_change_context(
    *,
    change_type: str | None = None,
    change_summary: str | None = None,
    session_id: str | None = None,
    created_by: str | None = None,
) -> None:
    """Tell the versioning trigger who changed a task and why, for this transaction only.

    Must run inside ``transaction.atomic()``: the settings are transaction-local
    (``set_config(..., true)``), so they never leak to another request on the same
    connection. Unset values are cleared, so the trigger falls back to 'auto_save'.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT set_config('orchestrator.change_type', %s, true),"
            " set_config('orchestrator.change_summary', %s, true),"
            " set_config('orchestrator.session_id', %s, true),"
            " set_config('orchestrator.created_by', %s, true)",
            [change_type or "", change_summary or "", session_id or "", created_by or ""],
        )


# A one-row relation for a statement's FROM list that makes the statement's own
# transaction commit without waiting for the WAL flush. For coordination state that the
# next hook call writes again (claims, their renewals, delivered notices, tool history,
# heartbeats): a Postgres crash can lose its last ~0.6 s (3 x wal_writer_delay), our own
# process dying loses nothing. Under agent load the commits that wait for the flush queue
# on the WAL lock behind each other (pg_stat_activity: WALWrite/WalSync), and their locks
# are held all that time. Acknowledged saves never use it.
ASYNC_COMMIT = "(SELECT set_config('synchronous_commit', 'off', true))"
# Its stand-in inside a caller's transaction: never weaken the commit of work one did not
# start.
SYNC_COMMIT = "(SELECT 1)"


def async_commit_sql() -> str:
    """``ASYNC_COMMIT``, or ``SYNC_COMMIT`` inside a transaction block (ours or a
    caller's: set_config(..., true) would last until that transaction's commit)."""
    return SYNC_COMMIT if connection.in_atomic_block else ASYNC_COMMIT


# How many of this thread's open atomic blocks a test harness opened around the code under
# test (a test case's blocks, which never commit). The test suite sets it (tests/conftest.py,
# set_harness_blocks); everywhere else it is 0. Thread-local, as Django's connections are.
_harness = threading.local()


def set_harness_blocks(count: int) -> None:
    """Declare that the outermost ``count`` atomic blocks of this thread's connection
    belong to a test harness (0: none)."""
    _harness.blocks = count


def in_callers_transaction() -> bool:
    """True inside a ``transaction.atomic()`` block that someone else opened and commits.

    Work that must follow a commit (publishing to Redis and files) then waits for it with
    ``on_commit``. The blocks a test case opens around a test do not count: they never
    commit, and the code under test must behave as it does when called on its own.
    """
    return len(connection.atomic_blocks) > getattr(_harness, "blocks", 0)


# Postgres aborts one of two transactions that wait on each other (deadlock_detected) or
# that serialise badly (serialization_failure); run again, the victim usually goes through.
RETRIED_SQLSTATES = frozenset({"40P01", "40001"})
RETRY_ATTEMPTS = 3


def retried_transaction(function: Callable[[], T]) -> T:
    """``function()`` in a transaction of its own, run again (up to RETRY_ATTEMPTS, after
    a short random pause) when Postgres chose it as the victim of a deadlock. Only for
    work whose every effect is in that transaction; inside a caller's transaction it runs
    once (the caller's transaction is what would have to run again)."""
    return _retried(function, atomic=True)


def retried_statement(function: Callable[[], T]) -> T:
    """``function()``, one statement that is its own transaction (autocommit), run again
    as ``retried_transaction`` runs its function: for a statement that locks several rows
    another transaction may lock in another order (a flush renewing a session's claims
    while a claimant marks them known)."""
    return _retried(function, atomic=False)


def _retried(function: Callable[[], T], *, atomic: bool) -> T:
    for attempt in range(1, RETRY_ATTEMPTS + 1):
        try:
            if not atomic:
                return function()
            with transaction.atomic():
                return function()
        except OperationalError as exc:
            sqlstate = getattr(exc.__cause__, "sqlstate", None)
            if (sqlstate not in RETRIED_SQLSTATES or attempt == RETRY_ATTEMPTS
                    or in_callers_transaction()):
                raise
            logger.info("transaction retried after %s (attempt %d)", sqlstate, attempt)
            time.sleep(random.uniform(0.005, 0.025) * attempt)
    raise AssertionError("unreachable")
