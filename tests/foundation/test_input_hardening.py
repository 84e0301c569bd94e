"""Inputs that once reached a backend and failed there (500 / 502) now answer 400 at the
door: NUL bytes, lone surrogates, NaN, deep nesting, integral floats, over-long task ids."""

from __future__ import annotations

import json

import pytest

from contexts.models import ContextVersion, TaskContext
from orchestrator.core.tools.input_checks import MAX_DEPTH
from orchestrator.core.tools.schema import MAX_TASK_ID_LENGTH
from sessions.models import SessionDetail

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
    from orchestrator.core.errors import OrchestratorError

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
