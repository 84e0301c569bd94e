"""Inputs that once reached a backend and failed there (500 / 502) now answer 400 at the
door: NUL bytes, lone surrogates, NaN, deep nesting, integral floats, over-long task ids,
date-times Postgres or Python cannot hold (issue 34: never a 500 showing SQL)."""

from __future__ import annotations

import json

import httpx
import pytest

from contexts.models import ContextVersion, TaskContext
from foundation.core.tools import registry
from foundation.core.tools.input_checks import MAX_DEPTH
from foundation.core.tools.schema import MAX_TASK_ID_LENGTH
from sessions.models import SessionDetail, ToolInvocation
from tests import mcp_client

pytestmark = pytest.mark.django_db


def raw_call(tools, tool: str, text: str):
    """Post JSON text as is: json.dumps would escape what the test wants to send."""
    return tools.call(tool, raw=text)


def test_nul_in_a_task_field_is_e1612_and_writes_nothing(tools):
    response = tools.call("create_task", {"taskId": "nul-task", "name": "x",
                                          "currentPhase": "a\u0000b"})
    assert response.status == 400, response.body
    assert response.error_code == "E1612"
    assert response.body["error"]["details"][0]["field"] == "currentPhase"
    assert not TaskContext.objects.filter(task_id="nul-task").exists()
    assert not ContextVersion.objects.filter(task_id="nul-task").exists()


def test_nul_in_a_key_of_a_free_form_patch_is_e1612(tools):
    session = tools.ok("start_session", {})["sessionId"]
    response = tools.call("update_session_scratchpad",
                          {"sessionId": session, "patch": {"bad\u0000key": 1}})
    assert response.status == 400, response.body
    assert response.error_code == "E1612"
    assert "NUL" in response.body["error"]["message"]
    assert SessionDetail.objects.get(session_id=session).scratchpad == {}


def test_lone_surrogate_is_e1612(tools):
    response = raw_call(tools, "create_task",
                        '{"taskId": "sur-task", "name": "bad \\ud800 name"}')
    assert response.status == 400, response.body
    assert response.error_code == "E1612"
    assert "surrogate" in response.body["error"]["message"]
    assert not TaskContext.objects.filter(task_id="sur-task").exists()


def test_a_proper_surrogate_pair_is_accepted(tools):
    # "\ud83d\ude00" is one emoji: only a lone half is refused.
    tools.ok("create_task", {"taskId": "emoji-task", "name": "smile \U0001F600"})
    assert TaskContext.objects.get(task_id="emoji-task").name.endswith("\U0001F600")


def test_nan_and_infinity_are_refused(tools):
    response = raw_call(tools, "create_task", '{"taskId": "nan-task", "name": "n", "score": NaN}')
    assert response.status == 400 and response.error_code == "E1612"
    assert not TaskContext.objects.filter(task_id="nan-task").exists()


def test_nesting_beyond_the_limit_is_e1612_not_a_server_fault(tools):
    session = tools.ok("start_session", {})["sessionId"]
    deep: dict = {}
    for _ in range(MAX_DEPTH + 5):
        deep = {"d": deep}
    response = tools.call("update_session_scratchpad", {"sessionId": session, "patch": deep})
    assert response.status == 400 and response.error_code == "E1612"
    assert "nested deeper" in response.body["error"]["message"]


def test_json_too_deep_for_the_parser_is_a_400(tools):
    text = '{"sessionId": "s", "patch": ' + "[" * 100_000 + "]" * 100_000 + "}"
    response = raw_call(tools, "update_session_scratchpad", text)
    assert response.status == 400 and response.error_code == "E1612"


def test_integral_float_ttl_is_refused_before_redis(tools):
    tools.ok("create_task", {"taskId": "lock-task", "name": "lock"})
    response = raw_call(tools, "acquire_task_lock",
                        json.dumps({"taskId": "lock-task", "sessionId": "s-1"})[:-1]
                        + ', "ttlSeconds": 65536.0}')
    assert response.status == 400, response.body
    assert response.error_code == "E1612"
    assert "integer" in response.body["error"]["message"]


@pytest.mark.parametrize("ttl", [0, -1, 86401, 2**63])
def test_ttl_out_of_bounds_is_refused(tools, ttl):
    tools.ok("create_task", {"taskId": "lock-task", "name": "lock"})
    response = tools.call("acquire_task_lock", {"taskId": "lock-task", "sessionId": "s-1",
                                                "ttlSeconds": ttl})
    assert response.status == 400 and response.error_code == "E1612"


def test_largest_ttl_is_accepted_by_redis(tools):
    tools.ok("create_task", {"taskId": "lock-task", "name": "lock"})
    tools.ok("acquire_task_lock", {"taskId": "lock-task", "sessionId": "s-1",
                                   "ttlSeconds": 86400})


def test_task_id_over_the_limit_is_refused_at_create(tools):
    too_long = "t" * (MAX_TASK_ID_LENGTH + 1)
    response = tools.call("create_task", {"taskId": too_long, "name": "long"})
    assert response.status == 400 and response.error_code == "E1612"
    assert not TaskContext.objects.filter(task_id=too_long).exists()


def test_longest_task_id_fits_every_file_it_becomes(tools, settings):
    longest = "t" * MAX_TASK_ID_LENGTH
    created = tools.ok("create_task", {"taskId": longest, "name": "long"})
    assert created["savedTo"]["file"] is True
    saved = tools.ok("save_context_snapshot", {"taskId": longest,
                                               "updates": {"currentPhase": "next"}})
    assert saved["savedTo"] == {"database": True, "redis": True, "file": True}
    assert (settings.CONTEXT_DIR / "task-agents" / f"{longest}.json").is_file()
    synced = tools.call("sync_hot_context", {})
    assert synced.status == 200, synced.body


def test_task_id_limit_holds_in_the_service_too():
    from contexts.services.tasks import create_task
    from foundation.core.errors import OrchestratorError

    with pytest.raises(OrchestratorError) as error:
        create_task("x" * (MAX_TASK_ID_LENGTH + 1), {"name": "long"})
    assert error.value.code == "E1612"


def test_the_fast_lane_answers_the_same(live_api):
    """The production REST path (ASGI fast lane) parses JSON itself: same answers."""
    import httpx

    url, token = live_api
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    deep = '{"taskId": "x", "name": ' + "[" * 100_000 + "]" * 100_000 + "}"
    nul = '{"taskId": "fast-nul", "name": "a\\u0000b"}'
    for body in (deep, nul):
        response = httpx.post(f"{url}/api/v1/tools/create_task/", content=body,
                              headers=headers, timeout=30)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["code"] == "E1612"
    assert not TaskContext.objects.filter(task_id="fast-nul").exists()


# -- date-time inputs (issue 34) -------------------------------------------------------------
# Every date-time input is an instant Postgres and Python both hold; anything else is the
# tool's validation code at the door, never a Postgres error (500 with its message).
BAD_DATE_TIMES = {
    "before year 1 (the issue's probe)": "0001-01-01T00:00:00+01:00",
    "offset past 15:59 (the issue's probe)": "2026-11-27T10:00:00+23:00",
    "year 9999 with a negative offset": "9999-12-31T23:00:00-05:00",
    "offset past 14:00": "2026-11-27T10:00:00+15:00",
    "before 1970": "1969-12-31T23:59:59Z",
    "a comma for the fraction (Postgres refuses it)": "2026-11-27T10:00:00,5Z",
    "not a date": "next tuesday",
    "no such day": "2026-02-30T10:00:00Z",
}
GOOD_DATE_TIMES = ["2026-11-27T10:00:00Z", "2026-11-27T10:00:00.123456+05:30",
                   "2026-11-27 10:00", "9998-12-31T23:59:59+14:00", "1970-01-01T00:00:00Z"]
EDGE_DATE_TIMES = ["2026-11-27t10:00:00z", "2026-11-27T10:00:60Z", "2026-11-27T24:00:00Z",
                   "2024-02-29T10:00:00Z", "1970-01-01T00:00:00+00:01", "1971-01-01T00:00:00+14:00",
                   "9997-12-31T23:59:59-14:00", "9998-12-31T23:59:59-00:01",
                   "2026-11-27T10:00:00+14:01", "2026-11-27T10:00:00.1234567891Z",
                   "+12026-11-27T10:00:00Z", "２０２６-11-27T10:00:00Z"]
# What an answer must never carry: Postgres's words or a statement.
DATABASE_WORDS = ("postgres", "psycopg", "sqlstate", "select ", "insert ", "update ",
                  "timestamptz", "out of range", "too small", "displacement", "line 1")


def no_database_text(body) -> None:
    text = json.dumps(body).lower()
    found = [word for word in DATABASE_WORDS if word in text]
    assert not found, (found, body)


def date_time_calls(session: str, value: str) -> list[tuple[str, dict]]:
    return [("pause_session", {"sessionId": session, "reason": "usage_limit",
                               "resetsAt": value}),
            ("record_activity", {"sessionId": session, "toolUses": [
                {"tool": "Edit", "success": True, "timestamp": "2026-11-27T10:00:00Z"},
                {"tool": "Bash", "success": True, "timestamp": value}]})]


@pytest.mark.parametrize("value", BAD_DATE_TIMES.values(), ids=BAD_DATE_TIMES.keys())
def test_a_date_time_no_backend_holds_is_the_validation_code(tools, value):
    session = tools.ok("start_session", {})["sessionId"]
    for tool, arguments in date_time_calls(session, value):
        response = tools.call(tool, arguments)
        assert (response.status, response.error_code) == (400, "E1612"), response.body
        field = response.body["error"]["details"][0]["field"]
        assert field in ("resetsAt", "toolUses.1.timestamp")
        no_database_text(response.body)
    detail = SessionDetail.objects.get(session_id=session)
    assert (detail.paused_at, detail.pause_resets_at) == (None, None)
    assert not ToolInvocation.objects.filter(session_id=session, transport="hook").exists()


@pytest.mark.parametrize("value", GOOD_DATE_TIMES)
def test_date_times_in_range_are_taken_as_before(tools, value):
    session = tools.ok("start_session", {})["sessionId"]
    for tool, arguments in date_time_calls(session, value):
        tools.ok(tool, arguments)
    assert "sessions" in tools.ok("check_recovery", {})


def test_every_date_time_input_is_checked_by_both_validators():
    """The Rust validator only ever accepts; it must not accept a date-time the Python one
    refuses (it decides with the same function), for every tool with a date-time input."""
    checked = 0
    for tool in registry.tools() + registry.internal_tools():
        for path in _date_time_paths(tool.input_schema):
            for value in BAD_DATE_TIMES.values():
                arguments = _minimal_with(tool.input_schema, path, value)
                assert not tool.quick_validator.is_valid(arguments), (tool.name, path, value)
                assert list(tool.validator.iter_errors(arguments)), (tool.name, path, value)
            for value in [*GOOD_DATE_TIMES, *EDGE_DATE_TIMES]:
                arguments = _minimal_with(tool.input_schema, path, value)
                if tool.quick_validator.is_valid(arguments):
                    assert not list(tool.validator.iter_errors(arguments)), (tool.name, value)
            checked += 1
    assert checked >= 2  # pause_session.resetsAt, record_activity.toolUses[].timestamp


def _date_time_paths(schema: dict, path: tuple = ()):
    if schema.get("format") == "date-time":
        yield path
    for name, sub in (schema.get("properties") or {}).items():
        yield from _date_time_paths(sub, (*path, name))
    if isinstance(schema.get("items"), dict):
        yield from _date_time_paths(schema["items"], (*path, 0))


def _minimal_with(schema: dict, path: tuple, value):
    """The schema's required fields, filled simply, with ``value`` at ``path``."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    if head == 0:
        return [_minimal_with(schema["items"], rest, value)]
    built = {name: _simple(schema["properties"][name])
             for name in schema.get("required", []) if name != head}
    built[head] = _minimal_with(schema["properties"][head], rest, value)
    return built


def _simple(schema: dict):
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    kind = kind[0] if isinstance(kind, list) else kind
    if kind == "object":
        return {n: _simple(schema["properties"][n]) for n in schema.get("required", [])}
    return {"string": "a", "boolean": True, "integer": 1, "number": 1, "array": []}.get(kind)


def test_the_issues_probes_over_rest_and_mcp_answer_400_without_sql(live_api):
    url, token = live_api
    headers = {"Authorization": f"Bearer {token}"}
    session = httpx.post(f"{url}/api/v1/tools/start_session/", json={}, headers=headers,
                         timeout=30).json()["sessionId"]
    for value in ("0001-01-01T00:00:00+01:00", "2026-11-27T10:00:00+23:00",
                  "9999-12-31T23:00:00-05:00"):
        for tool, arguments in date_time_calls(session, value):
            answer = httpx.post(f"{url}/api/v1/tools/{tool}/", json=arguments,
                                headers=headers, timeout=30)
            assert (answer.status_code, answer.json()["error"]["code"]) == (400, "E1612"), \
                answer.text
            no_database_text(answer.json())
            over_mcp = mcp_client.call_tool(url, token, tool, arguments)
            assert over_mcp.is_error
            assert over_mcp.structured_content["error"]["code"] == "E1612"
            no_database_text(over_mcp.structured_content)
            no_database_text(over_mcp.content[0].text)
