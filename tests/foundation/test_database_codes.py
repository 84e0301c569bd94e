"""Issue 22 item 8: the spec's own codes for a database failure where it names them:
rollback_to is E1624 (ROLLBACK_FAILED), check_recovery E1630 (RECOVERY_CHECK_FAILED);
while Postgres is unreachable they answer 503 like E1654 (details.cause says so), and
every other tool still answers E1654. No mocks: the database settings point at a real
port where nothing listens, as a stopped server. An answer never carries Postgres's
message (issue 34): a real error raised by a trigger shows only its kind and SQLSTATE."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest
from django.db import OperationalError, connection, connections, transaction

from foundation.core.errors import OrchestratorError
from foundation.core.tools import registry
from foundation.core.tools.definition import ToolContext
from sessions.models import SessionEvent
from tests import mcp_client


def _closed_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        return listener.getsockname()[1]  # closed on exit: nothing listens there now


@pytest.fixture
def postgres_down(django_db_blocker) -> Iterator[None]:
    databases = connections.settings
    original = databases["default"]
    original_connection = connections["default"]
    databases["default"] = {**original, "HOST": "127.0.0.1", "PORT": str(_closed_port()),
                            "CONN_MAX_AGE": 0,
                            "OPTIONS": {**original["OPTIONS"], "connect_timeout": 2}}
    del connections["default"]
    try:
        with django_db_blocker.unblock():
            yield
    finally:
        connections["default"].close()
        databases["default"] = original
        connections["default"] = original_connection


def _failure(tool: str, arguments: dict, transport: str = "command") -> OrchestratorError:
    with pytest.raises(OrchestratorError) as caught:
        registry.call_tool(tool, arguments, ToolContext(transport, "tester"))
    return caught.value


@pytest.mark.parametrize("tool,arguments,code", [
    ("rollback_to", {"taskId": "t1", "target": {"type": "version", "version": 1}}, "E1624"),
    ("rollback_to", {"taskId": "t1", "target": {"type": "checkpoint",
                                                "checkpointId": "cp-1"}}, "E1624"),
    ("check_recovery", {}, "E1630"),
    ("check_recovery", {"markRecovered": "s1"}, "E1630"),
    ("get_unified_context", {"taskId": "t1"}, "E1654"),
])
def test_a_database_failure_answers_the_tools_spec_code(postgres_down, tool, arguments,
                                                        code):
    error = _failure(tool, arguments)
    assert error.code == code, error.to_dict()
    assert error.http_status == 503  # unreachable: retry later, whatever the code
    details = error.to_dict()["error"]["details"]
    assert details["reason"]
    if code != "E1654":
        assert details["cause"] == "E1654"
        assert error.message.startswith("PostgreSQL is unreachable")


@pytest.mark.django_db
def test_the_codes_are_unchanged_while_postgres_answers(tools):
    """Not a database failure: rollback_to and check_recovery answer as before."""
    tools.ok("create_task", {"taskId": "t1", "name": "One"})
    answer = tools.call("rollback_to", {"taskId": "t1", "target": {"type": "version",
                                                                   "version": 9}})
    assert (answer.status, answer.error_code) == (404, "E1623")
    answer = tools.call("check_recovery", {"markRecovered": "ghost"})
    assert (answer.status, answer.error_code) == (404, "E1631")
    assert "sessions" in tools.ok("check_recovery", {})


@pytest.mark.django_db
def test_a_deadlock_that_ran_out_of_retries_is_not_called_unreachable():
    """E1654 (503: retry) all the same, but the message says what happened; the error is
    the real one Postgres raises in a deadlock's victim (SQLSTATE 40P01)."""
    with (pytest.raises(OperationalError) as caught, transaction.atomic(),
          connection.cursor() as cursor):
        cursor.execute("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40P01'; END $$")
    message = registry.unavailable_message(caught.value)
    assert message.startswith("PostgreSQL aborted this call's transaction to break a "
                              "deadlock"), message


# -- no database text in an answer (issue 34) -------------------------------------------------
SECRET = "SELECT secret_column FROM private_table WHERE owner = 'someone else'"


@pytest.fixture
def failing_event_insert(live_api) -> Iterator[None]:
    """Postgres refuses every new session event, with a message quoting SQL: a real
    database error on a tool's write path, as a constraint or a bad value would raise."""
    table = SessionEvent._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE FUNCTION test_refuse_event() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION USING ERRCODE = '22008', MESSAGE = %s; END $$", [SECRET])
        cursor.execute(f"CREATE TRIGGER test_refuse_event BEFORE INSERT ON {table} "
                       "FOR EACH ROW EXECUTE FUNCTION test_refuse_event()")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP TRIGGER test_refuse_event ON {table}")
            cursor.execute("DROP FUNCTION test_refuse_event()")


def test_a_database_error_answers_without_its_message(live_api, failing_event_insert):
    url, token = live_api
    headers = {"Authorization": f"Bearer {token}"}
    session = httpx.post(f"{url}/api/v1/tools/start_session/", json={}, headers=headers,
                         timeout=30).json()["sessionId"]
    arguments = {"sessionId": session, "type": "user_message", "role": "user",
                 "content": "hello"}
    answer = httpx.post(f"{url}/api/v1/tools/append_session_event/", json=arguments,
                        headers=headers, timeout=30)
    assert (answer.status_code, answer.json()["error"]["code"]) == (500, "E1699"), answer.text
    assert answer.json()["error"]["details"] == {
        "reason": "DatetimeFieldOverflow (SQLSTATE 22008)"}
    over_mcp = mcp_client.call_tool(url, token, "append_session_event", arguments)
    assert over_mcp.is_error
    assert over_mcp.structured_content["error"] == answer.json()["error"]
    for text in (answer.text, json.dumps(over_mcp.structured_content),
                 over_mcp.content[0].text):
        assert "secret_column" not in text and "SELECT" not in text and "INSERT" not in text


@pytest.mark.django_db
def test_a_redis_failure_answers_without_its_message(tools, settings):
    """Redis's words (here: the address it could not reach) stay in the log too."""
    from tests.conftest import free_port

    tools.ok("create_task", {"taskId": "t-redis", "name": "Redis down"})
    session = tools.ok("start_session", {"taskId": "t-redis"})["sessionId"]
    port = free_port()
    settings.REDIS_URL = f"redis://127.0.0.1:{port}/0"
    answer = tools.call("acquire_task_lock", {"taskId": "t-redis", "sessionId": session})
    assert answer.error_code == "E1650", answer.body
    # The kind of failure only: the connection's own error, or the circuit breaker's word
    # when the call's rate-limit check met the dead Redis first (it opens the circuit).
    assert answer.body["error"]["details"]["reason"] in (
        "ConnectionError", "circuit open after a recent Redis failure"), answer.body
    assert str(port) not in json.dumps(answer.body)
    assert "127.0.0.1" not in json.dumps(answer.body)
