"""Issue 40 item 7: the spec's failure codes happen for real. A checkpoint Postgres cannot
store is E1620 (CHECKPOINT_CREATION_FAILED), a task switch Postgres cannot write is E1662
(TASK_SWITCH_FAILED), each with nothing changed. No mocks: the real Postgres refuses the
write, through a trigger raising what a full disk raises (SQLSTATE 53100, "could not
extend file"), as in tests/foundation/test_database_codes.py. (E1652, a graph query whose
Postgres fallback fails too: tests/graph/test_fallback_failure.py.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.conf import settings
from django.db import connection

from contexts.models import Checkpoint, CheckpointDetails, GlobalContext, TaskContext
from foundation.core.db import qualified

pytestmark = pytest.mark.django_db


@contextmanager
def disk_full_on(table: str, event: str) -> Iterator[None]:
    """Postgres refuses every ``event`` (INSERT / UPDATE) of ``table`` as a full disk does."""
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
            "RAISE EXCEPTION USING ERRCODE = '53100', MESSAGE = 'could not extend file "
            "\"base/16384/24576\": No space left on device'; END $$")
        cursor.execute(f"CREATE TRIGGER test_disk_full BEFORE {event} ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION test_disk_full()")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER test_disk_full ON {table}")
            cursor.execute("DROP FUNCTION test_disk_full()")


def test_a_checkpoint_postgres_cannot_store_is_e1620(tools):
    tools.ok("create_task", {"taskId": "c1", "name": "Parser"})
    with disk_full_on(qualified("checkpoints"), "INSERT"):
        answer = tools.call("create_checkpoint", {"taskId": "c1", "label": "before refactor"})
    assert (answer.status, answer.error_code) == (500, "E1620"), answer.body
    assert answer.body["error"]["details"] == {"reason": "DiskFull (SQLSTATE 53100)"}
    assert "No space left" not in str(answer.body)  # Postgres's words stay in the log
    assert not Checkpoint.objects.exists() and not CheckpointDetails.objects.exists()
    # Once Postgres takes writes again the same call works.
    assert tools.ok("create_checkpoint", {"taskId": "c1", "label": "before refactor"})[
        "success"]


def test_a_switch_postgres_cannot_write_is_e1662_and_changes_nothing(tools):
    tools.ok("create_task", {"taskId": "from", "name": "From"})
    tools.ok("create_task", {"taskId": "to", "name": "To"})
    tools.ok("switch_task", {"toTaskId": "from"})
    tools.ok("start_session", {"sessionId": "sw", "taskId": "from"})
    before = TaskContext.objects.get(task_id="from").version
    with disk_full_on(qualified("global_context"), "UPDATE"):
        answer = tools.call("switch_task", {
            "fromTaskId": "from", "toTaskId": "to", "sessionId": "sw",
            "currentTaskUpdates": {"currentPhase": "handing over"}})
    assert (answer.status, answer.error_code) == (409, "E1662"), answer.body
    assert answer.body["error"]["details"] == {"reason": "DiskFull (SQLSTATE 53100)"}
    # One transaction: the source's save, the target's stamp and the active task are
    # all as they were.
    source = TaskContext.objects.get(task_id="from")
    assert (source.version, source.current_phase) == (before, None)
    assert TaskContext.objects.get(task_id="to").last_session_at is None
    assert GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID).active_task_id \
        == "from"
