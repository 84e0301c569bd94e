"""Every door calls the registry: console actions, periodic jobs and management commands
are tool calls too (traced, metered, audited as from REST or MCP). Operations only they
may run are internal tools: never offered to a network client."""

from __future__ import annotations

import io

import httpx
import jsonschema
import pytest
from django.core.management import call_command
from prometheus_client import REGISTRY

from foundation.core.tools import ToolContext, call_tool, registry
from sessions.models import ActiveSession
from tests import mcp_client

INTERNAL = {"detect_crashed_sessions", "clean_stale_sessions", "mark_session_crashed",
            "release_session_locks", "sync_graph", "drain_graph_outbox",
            "rollback_global_context", "prune", "backup", "resume_paused_sessions",
            "replay_pending_saves", "check_checkpoints", "archive_checkpoints"}


def calls(tool: str, transport: str) -> float:
    return sum(REGISTRY.get_sample_value("session_orchestration_tool_calls_total",
                                         {"tool": tool, "transport": transport,
                                          "outcome": outcome}) or 0
               for outcome in ("ok", "error", "E1650", "E1600"))


def test_internal_operations_are_not_offered_to_network_clients(live_api):
    assert {t.name for t in registry.internal_tools()} == INTERNAL
    assert not INTERNAL & {t.name for t in registry.tools()}
    url, token = live_api
    for name in sorted(INTERNAL):
        response = httpx.post(f"{url}/api/v1/tools/{name}/", json={}, timeout=30,
                              headers={"Authorization": f"Bearer {token}"})
        assert (response.status_code, response.json()["error"]["code"]) == (404, "E1615")
    listed = {t.name for t in mcp_client.list_tools(url, token).tools}
    assert listed and not INTERNAL & listed
    result = mcp_client.call_tool(url, token, "detect_crashed_sessions", {})
    assert result.is_error and result.structured_content["error"]["code"] == "E1615"
    schema = httpx.get(f"{url}/api/schema/", timeout=30, headers={
        "Authorization": f"Bearer {token}", "Accept": "application/json"}).json()
    assert not {f"/api/v1/tools/{name}/" for name in INTERNAL} & set(schema["paths"])


@pytest.mark.django_db
@pytest.mark.parametrize("name, arguments", [
    ("detect_crashed_sessions", {}),
    ("clean_stale_sessions", {}),
    ("drain_graph_outbox", {}),
    ("sync_graph", {}),
    ("prune", {"dryRun": True}),
    ("check_checkpoints", {}),
])
def test_internal_answers_conform_to_their_schemas(name, arguments):
    answer = call_tool(name, arguments, ToolContext("command", actor="test"))
    jsonschema.Draft202012Validator(registry.get_tool(name).output_schema).validate(answer)


@pytest.mark.django_db
def test_a_command_is_a_tool_call(tools):
    before = calls("detect_crashed_sessions", "command")
    call_command("detect_crashed_sessions", stdout=io.StringIO())
    assert calls("detect_crashed_sessions", "command") == before + 1


@pytest.mark.django_db
def test_a_periodic_job_is_a_tool_call(tools):
    from sessions.tasks import detect_crashed_sessions_task

    before = calls("detect_crashed_sessions", "task")
    assert detect_crashed_sessions_task()["success"] is True
    assert calls("detect_crashed_sessions", "task") == before + 1


@pytest.mark.django_db
def test_a_console_action_is_a_tool_call(admin_client, tools):
    session = tools.ok("start_session", {})["sessionId"]
    before = calls("mark_session_crashed", "admin")
    admin_client.post("/admin/agent_sessions/activesession/", {
        "action": "mark_crashed",
        "_selected_action": [str(ActiveSession.objects.get(session_id=session).pk)]})
    assert calls("mark_session_crashed", "admin") == before + 1
    assert tools.ok("check_recovery", {})["sessions"][0]["sessionId"] == session
