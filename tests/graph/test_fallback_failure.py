"""Issue 40 item 7: E1652 (NEO4J_QUERY_FAILED) happens for real. A graph read whose Bolt
server is down falls back to Postgres (test_sync.py); only when that read fails too is the
call E1652, naming both failures' kinds. Real servers: the Bolt URL points at a port where
nothing listens, and the real Postgres cannot give the fallback its relationships within
the lock timeout because another connection holds task_relationships exclusively (as a
migration rewriting the table does)."""

from __future__ import annotations

import psycopg
import pytest
from django.db import connection, transaction

from foundation.core.db import qualified
from graph import backend
from tests.conftest import free_port


@pytest.fixture
def relationships_held(db):
    """Another connection holds task_relationships ACCESS EXCLUSIVE until the test ends."""
    holder = psycopg.connect(**connection.get_connection_params())
    holder.execute(f"LOCK TABLE {qualified('task_relationships')} IN ACCESS EXCLUSIVE MODE")
    try:
        yield
    finally:
        holder.rollback()
        holder.close()


def test_graph_down_and_postgres_fallback_failing_is_e1652(tools, settings,
                                                           relationships_held):
    tools.ok("create_task", {"taskId": "g1", "name": "One"})
    settings.ENABLE_NEO4J = True
    settings.NEOMODEL_DATABASE_URL = f"bolt://root:x@127.0.0.1:{free_port()}"  # nothing
    backend.reset()
    # The failed read aborts the transaction it runs in: run it in a savepoint of the
    # test's transaction and go back to it (SET LOCAL is undone with it).
    savepoint = transaction.savepoint()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL lock_timeout = '200ms'")
    try:
        answer = tools.call("get_task_graph", {})
    finally:
        transaction.savepoint_rollback(savepoint)
        backend.reset()
    assert (answer.status, answer.error_code) == (502, "E1652"), answer.body
    details = answer.body["error"]["details"]
    assert details["postgres"] == "LockNotAvailable (SQLSTATE 55P03)"
    assert details["graph"]  # the Bolt failure's kind (or the open breaker's word)
    assert "task_relationships" not in str(answer.body)
