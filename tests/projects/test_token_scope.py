"""Tokens limited to projects (issue 19): another project's things answer as if they did
not exist (404, the same code as a missing one), naming another project is 403 E1608;
REST, browsing and MCP alike."""

from __future__ import annotations

import time

import pytest

from foundation.core.models import ApiToken, TokenScope
from tests import mcp_client
from tests.conftest import ToolClient


def limited(scope: str = TokenScope.WRITE, projects=("app-one",)) -> tuple[str, ToolClient]:
    _, raw = ApiToken.issue(f"limited-{time.monotonic_ns()}", scope, list(projects))
    return raw, ToolClient(raw)


def populate(tools: ToolClient) -> dict[str, str]:
    for key in ("app-one", "app-two"):
        tools.ok("create_project", {"projectId": key, "name": key})
    for task_id, project in (("a1", "app-one"), ("b1", "app-two")):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "projectId": project,
                                 "keyFiles": ["src/app.py"], "status": "in_progress"})
    b_session = tools.ok("start_session", {"taskId": "b1"})["sessionId"]
    checkpoint = tools.ok("create_checkpoint", {"label": "b", "taskId": "b1"})
    conflict = tools.ok("report_conflict", {"taskAId": "b1", "description": "b only"})
    return {"session": b_session, "checkpoint": checkpoint["checkpointId"],
            "conflict": conflict["conflict"]["id"]}


def shape(response) -> tuple[int, str | None, object]:
    details = response.body["error"].get("details")
    keys = sorted(details) if isinstance(details, dict) else type(details).__name__
    return response.status, response.error_code, keys


@pytest.mark.django_db
def test_another_projects_things_answer_exactly_as_missing_ones(tools):
    ids = populate(tools)
    _, client = limited()
    pairs = [
        ("get_unified_context", {"taskId": "b1"}, {"taskId": "ghost"}),
        ("save_context_snapshot", {"taskId": "b1", "updates": {"currentPhase": "x"}},
         {"taskId": "ghost", "updates": {"currentPhase": "x"}}),
        ("get_context_bundle", {"taskId": "b1"}, {"taskId": "ghost"}),
        ("add_task_relationship", {"sourceTaskId": "a1", "targetTaskId": "b1",
                                   "relationshipType": "blocks"},
         {"sourceTaskId": "a1", "targetTaskId": "ghost", "relationshipType": "blocks"}),
        ("heartbeat", {"sessionId": ids["session"]}, {"sessionId": "session-ghost"}),
        ("rollback_to", {"taskId": "a1", "target": {"type": "checkpoint",
                                                     "checkpointId": ids["checkpoint"]}},
         {"taskId": "a1", "target": {"type": "checkpoint", "checkpointId": "cp-ghost"}}),
        ("resolve_conflict", {"conflictId": ids["conflict"], "resolution": {"action": "ignore"}},
         {"conflictId": "00000000-0000-0000-0000-000000000000",
          "resolution": {"action": "ignore"}}),
    ]
    for tool, foreign, missing in pairs:
        got, expected = client.call(tool, foreign), client.call(tool, missing)
        assert shape(got) == shape(expected), (tool, got.body, expected.body)
        assert got.status == 404, tool
    assert client.call("get_unified_context", {"taskId": "b1"}).error_code == "E1610"
    # ... and the other project is unchanged.
    assert tools.ok("get_unified_context", {"taskId": "b1"})["task"]["currentPhase"] != "x"


@pytest.mark.django_db
def test_naming_another_project_is_403_and_the_own_project_is_the_default(tools):
    populate(tools)
    _, client = limited()
    for tool, arguments in (
            ("create_task", {"taskId": "b9", "name": "x", "projectId": "app-two"}),
            ("update_global_context", {"projectId": "app-two", "hardRules": ["mine"]}),
            ("start_session", {"projectId": "app-two"}),
            ("get_unified_context", {"projectId": "app-two"}),
            ("detect_conflicts", {"projectId": "app-two"})):
        response = client.call(tool, arguments)
        assert (response.status, response.error_code) == (403, "E1608"), tool
    assert client.ok("create_task", {"taskId": "a2", "name": "x"})["projectId"] == "app-one"
    assert client.ok("start_session", {})["projectId"] == "app-one"
    assert [p["projectId"] for p in client.ok("list_projects")["projects"]] == ["app-one"]
    header = ToolClient(client.authorization.split()[1], project="app-two")
    assert header.call("list_projects").error_code == "E1608"


@pytest.mark.django_db
def test_scopes_combine_with_projects(tools):
    populate(tools)
    _, reader = limited(TokenScope.READ)
    assert reader.ok("get_unified_context", {"taskId": "a1"})["projectId"] == "app-one"
    assert reader.call("get_unified_context", {"taskId": "b1"}).error_code == "E1610"
    assert reader.call("save_context_snapshot", {
        "taskId": "a1", "updates": {"currentPhase": "x"}}).error_code == "E1608"
    _, both = limited(projects=("app-one", "app-two"))
    assert both.ok("get_unified_context", {"taskId": "b1"})["projectId"] == "app-two"


@pytest.mark.django_db
def test_browsing_shows_only_the_tokens_projects(tools):
    populate(tools)
    _, client = limited()
    tasks = client.get("/api/v1/tasks/")
    assert [t["taskId"] for t in tasks.body["results"]] == ["a1"]
    assert client.get("/api/v1/tasks/b1/").status == 404
    assert client.get("/api/v1/tasks/b1/versions/").status == 404
    assert client.get("/api/v1/conflicts/").body["count"] == 0
    assert client.get("/api/v1/sessions/").body["count"] == 0
    assert client.get("/api/v1/checkpoints/").body["count"] == 0
    assert client.get("/api/v1/tasks/", projectId="app-two").body["count"] == 0
    assert client.get("/api/v1/global-context/", projectId="app-two").status == 403
    # An unlimited token sees both, and narrows with ?projectId=.
    assert {t["taskId"] for t in tools.get("/api/v1/tasks/").body["results"]} >= {"a1", "b1"}
    assert [t["taskId"] for t in tools.get("/api/v1/tasks/", projectId="app-two")
            .body["results"]] == ["b1"]


def test_the_same_rules_over_mcp(live_api):
    url, token = live_api
    populate(ToolClient(token))
    raw, _ = limited()
    foreign = mcp_client.call_tool(url, raw, "get_unified_context", {"taskId": "b1"})
    assert foreign.is_error and foreign.structured_content["error"]["code"] == "E1610"
    write = mcp_client.call_tool(url, raw, "save_context_snapshot",
                                 {"taskId": "b1", "updates": {"currentPhase": "x"}})
    assert write.is_error and write.structured_content["error"]["code"] == "E1610"
    named = mcp_client.call_tool(url, raw, "update_global_context",
                                 {"projectId": "app-two", "hardRules": ["mine"]})
    assert named.is_error and named.structured_content["error"]["code"] == "E1608"
    own = mcp_client.call_tool(url, raw, "create_task", {"taskId": "a5", "name": "x"})
    assert not own.is_error and own.structured_content["projectId"] == "app-one"
    # The header claude_setup writes into .mcp.json: calls naming no project go there.
    header = {"X-Orchestrator-Project": "app-two"}
    placed = mcp_client.call_tool(url, token, "create_task", {"taskId": "b5", "name": "x"},
                                  headers=header)
    assert placed.structured_content["projectId"] == "app-two"
    refused = mcp_client.call_tool(url, raw, "list_projects", {}, headers=header)
    assert refused.is_error and refused.structured_content["error"]["code"] == "E1608"


@pytest.mark.django_db
def test_a_taken_id_is_refused_alike_wherever_it_is_held(tools):
    """Issue 34: ids are unique across the server, so creating one another project holds
    must be refused; the refusal is the one for an id of the token's own project and
    carries only the id sent: one bit (taken), never where or what (docs/operations/tokens.md)."""
    ids = populate(tools)
    own_session = tools.ok("start_session", {"taskId": "a1"})["sessionId"]
    _, client = limited()

    def refusal(tool, arguments):
        response = client.call(tool, arguments)
        error = response.body["error"]
        return response.status, error["code"], error["details"], error["message"]

    foreign_task = refusal("create_task", {"taskId": "b1", "name": "x"})
    own_task = refusal("create_task", {"taskId": "a1", "name": "x"})
    assert foreign_task[:2] == own_task[:2] == (409, "E1614")
    assert foreign_task[2] == {"taskId": "b1"} and own_task[2] == {"taskId": "a1"}
    assert foreign_task[3] == own_task[3].replace("a1", "b1")
    foreign_session = refusal("start_session", {"sessionId": ids["session"]})
    own = refusal("start_session", {"sessionId": own_session})
    assert foreign_session[:2] == own[:2] == (409, "E1601")
    assert foreign_session[2] == {"sessionId": ids["session"]}
    assert foreign_session[3] == own[3].replace(own_session, ids["session"])
    assert "app-two" not in str(foreign_task) + str(foreign_session)
