"""Session tests see only their own sessions.

Django's flush after a transactional test empties only tables on the search_path, so
sessions committed by a transactional test (here or in another app) would outlive it and
show up in the next test's check_recovery. Each test starts from empty session tables
(inside its transaction for ``db`` tests) and transactional tests clean up after
themselves. TRUNCATE, unlike DELETE, is not stopped by the event log's immutability
trigger (a row-level trigger).
"""

from __future__ import annotations

import pytest
from django.db import connection

from foundation.core.db import qualified
from sessions.models import SessionDetail, SessionEvent, SessionHandoff, ToolInvocation

TABLES = [qualified("active_sessions")] + [
    m._meta.db_table for m in (SessionDetail, SessionEvent, SessionHandoff, ToolInvocation)]


def _truncate() -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(TABLES)}")


@pytest.fixture(autouse=True)
def empty_session_tables(request, isolated_backends):
    names = request.fixturenames
    transactional = "transactional_db" in names or "live_api" in names or any(
        m.kwargs.get("transaction") for m in request.node.iter_markers("django_db"))
    uses_db = transactional or "db" in names or request.node.get_closest_marker("django_db")
    if uses_db:
        _truncate()
    yield
    if transactional:
        _truncate()
