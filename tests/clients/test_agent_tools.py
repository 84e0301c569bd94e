"""The lean tool list: ``/mcp/agent`` (and ``mcp_stdio --agent-tools``) offers only the
tools a model should call itself (``orchestrator.web.agent_tools``), through the official
Python MCP client, while ``/mcp`` keeps offering every tool.

Each agent tool is a registry tool under another name: the same scenario run with the
agent names on /mcp/agent and with the registry names on /mcp must give the same answers.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from anyio.from_thread import start_blocking_portal
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

from foundation.core.projects import CLIENT_PROJECT_HEADER
from foundation.core.tools import registry
from foundation.core.tools.schema import answer_or_error
from orchestrator.web import agent_tools, mcp
from tests.ops.test_commands import ROOT, _env_for_test_database

CATALOGUE = {
    "get_task_context": "get_unified_context",
    "save_task_context": "save_context_snapshot",
    "create_task": "create_task",
    "switch_task": "switch_task",
    "create_checkpoint": "create_checkpoint",
    "rollback_task": "rollback_to",
    "list_checkpoints": "list_checkpoints",
    "get_task_graph": "get_task_graph",
    "add_task_relationship": "add_task_relationship",
    "check_conflicts": "detect_conflicts",
    "report_conflict": "report_conflict",
}
HOOK_TOOLS = ("heartbeat", "end_session", "start_session", "record_activity",
              "report_compaction", "append_session_event", "check_recovery")
# What Claude Code names a tool of the MCP server "orchestrator" (claude_setup's entry).
CLAUDE_PREFIX = "mcp__orchestrator__"
BUDGET = 8192


@asynccontextmanager
async def _session(url: str, token: str | None, headers: dict[str, str] | None = None):
    sent = {"Authorization": f"Bearer {token}"} if token else {}
    sent.update(headers or {})
    async with (
        httpx2.AsyncClient(headers=sent, timeout=30) as http,
        streamable_http_client(url, http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        yield session


class Client:
    """The official Python MCP client on one endpoint, for synchronous test code."""

    def __init__(self, portal, session) -> None:
        self.portal, self.session = portal, session

    def list(self):
        return self.portal.call(self.session.list_tools).tools

    def call(self, name: str, arguments: dict[str, Any]):
        return self.portal.call(self.session.call_tool, name, arguments)

    def ok(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = self.call(name, arguments)
        assert not result.is_error, (name, arguments, result.content)
        return result.structured_content


@contextmanager
def client(base: str, token: str, path: str = "/mcp/agent",
           headers: dict[str, str] | None = None) -> Iterator[Client]:
    with (start_blocking_portal() as portal,
          portal.wrap_async_context_manager(_session(f"{base}{path}", token, headers))
          as session):
        yield Client(portal, session)


def request_bytes(tools) -> int:
    """The bytes Claude Code puts in the model request for these tools: its Messages API
    tool objects (name, description, input_schema), JSON as JavaScript writes it."""
    definitions = [{"name": f"{CLAUDE_PREFIX}{t.name}", "description": t.description,
                    "input_schema": t.input_schema} for t in tools]
    return len(json.dumps(definitions, separators=(",", ":"), ensure_ascii=False).encode())


# -- the catalogue, without a server --------------------------------------------------------

def test_the_catalogue_names_its_registry_tools():
    assert {entry.name: entry.tool for entry in agent_tools.CATALOGUE} == CATALOGUE
    for entry in agent_tools.CATALOGUE:
        assert not registry.get_tool(entry.tool).internal
        assert len(entry.description) <= 200, entry.name


def _same_but_descriptions(lean: dict[str, Any], full: dict[str, Any], where: str) -> None:
    """``lean`` keeps a subset of ``full``'s properties with the same types and
    constraints (descriptions aside), at every level."""
    for key in set(lean) | set(full):
        if key in ("description", "properties"):
            continue
        if key == "additionalProperties" and where.count(".") == 0:
            assert lean[key] is False, where
            continue
        assert lean.get(key) == _strip(full.get(key)), (where, key)
    if "properties" in lean:
        assert set(lean["properties"]) <= set(full["properties"]), where
        for name, schema in lean["properties"].items():
            _same_but_descriptions(schema, full["properties"][name], f"{where}.{name}")


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k != "description"
                or not isinstance(v, str)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def test_trimmed_schemas_are_cut_from_the_registrys():
    for listed in agent_tools.listed():
        full = registry.get_tool(CATALOGUE[listed.name]).input_schema
        _same_but_descriptions(listed.input_schema, full, listed.name)
        assert listed.input_schema["additionalProperties"] is False
        assert set(full.get("required", ())) <= set(listed.input_schema["properties"])


# -- /mcp/agent over HTTP --------------------------------------------------------------------

@pytest.mark.slow
def test_the_lean_list_is_the_catalogue_within_the_budget(live_api):
    url, token = live_api
    with client(url, token) as agent:
        listed = agent.list()
    assert [t.name for t in listed] == list(CATALOGUE)
    for tool in listed:
        registry_tool = registry.get_tool(CATALOGUE[tool.name])
        # outputSchema as /mcp advertises it: the registry tool's answer or the error object.
        assert tool.output_schema == answer_or_error(registry_tool.output_schema)
    size = request_bytes(listed)
    assert size <= BUDGET, f"the agent tools take {size} bytes of the model request"
    print(f"tool definitions: {size} bytes ({len(listed)} tools)")


@pytest.mark.slow
def test_mcp_still_lists_every_tool(live_api):
    url, token = live_api
    with client(url, token, "/mcp") as full:
        listed = full.list()
    assert {t.name for t in listed} == {t.name for t in registry.tools()}
    assert [t.model_dump() for t in listed] == [t.model_dump() for t in mcp.list_tools()]
    assert request_bytes(listed) > 4 * BUDGET  # what the lean list saves


@pytest.mark.slow
def test_hook_tools_are_neither_listed_nor_callable(live_api):
    url, token = live_api
    with client(url, token) as agent:
        names = {t.name for t in agent.list()}
        for tool in (*HOOK_TOOLS, "get_unified_context", "no_such_tool"):
            assert tool not in names
            result = agent.call(tool, {"sessionId": "whatever"})
            assert result.is_error, tool
            assert result.structured_content["error"]["code"] == "E1615"
            assert result.content[0].text == f"E1615: No tool named {tool!r}"
    # /mcp answers an unknown name the same way.
    with client(url, token, "/mcp") as full:
        unknown = full.call("no_such_tool", {"sessionId": "whatever"})
    assert unknown.is_error and unknown.content[0].text == "E1615: No tool named 'no_such_tool'"
    assert set(unknown.structured_content) == set(result.structured_content)


@pytest.mark.slow
@pytest.mark.parametrize("header", [None, "Bearer wrong-token", "Basic abc"])
@pytest.mark.parametrize("path", ["/mcp/agent", "/mcp/agent/"])
def test_mcp_agent_refuses_a_missing_or_wrong_token(live_api, header, path):
    url, _ = live_api
    headers = {"Authorization": header} if header else {}
    for endpoint in (path, "/mcp"):
        response = httpx.post(f"{url}{endpoint}", json={"jsonrpc": "2.0", "id": 1,
                                                        "method": "tools/list"},
                              headers={**headers,
                                       "Accept": "application/json, text/event-stream"})
        assert response.status_code == 401, endpoint
        assert response.json()["error"]["code"] == "E1609"


TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}")
VOLATILE = frozenset({"timestamp", "loadedAt", "checkpointId", "backupCheckpointId",
                      "conflictId", "id", "durationMs",
                      # bytes and hash of a snapshot holding times and generated ids
                      "size", "originalSize", "storedBytes", "hash"})


def _normal(value: Any, prefix: str) -> Any:
    """An answer with the run's id prefix taken out and what differs run to run (times,
    generated ids) blanked, so the two runs compare."""
    if isinstance(value, dict):
        return {key: "<volatile>" if key in VOLATILE else _normal(item, prefix)
                for key, item in value.items()}
    if isinstance(value, list):
        items = [_normal(item, prefix) for item in value]
        return sorted(items, key=json.dumps) if all(isinstance(i, str) for i in items) \
            else items
    if isinstance(value, str):
        return "<time>" if TIMESTAMP.match(value) else value.replace(prefix, "")
    return value


def _scenario(call, prefix: str) -> list[tuple[str, Any]]:
    """Every agent tool once or more, on tasks named ``prefix``...; (tool, answer) each.
    ``call(agent_name, arguments)`` calls the tool under its agent or registry name."""
    a, b = f"{prefix}one", f"{prefix}two"
    # Files of this run only: the other run's tasks must not conflict with these.
    shared = [f"src/{prefix}shared.py", f"src/{prefix}common.py", f"src/{prefix}util.py"]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("create_task", {"taskId": a, "name": "One", "status": "in_progress",
                         "keyFiles": shared}),
        ("create_task", {"taskId": b, "name": "Two", "priority": 3, "keyFiles": shared}),
        ("save_task_context", {"taskId": a, "changeSummary": "progress",
                               "updates": {"currentPhase": "build",
                                           "immediateContext": {"workingOn": "parser",
                                                                "nextStep": "tests",
                                                                "blockers": ["review"]},
                                           "technicalDecisions": ["use a table"]}}),
        ("get_task_context", {"taskId": a, "depth": "warm"}),
        ("create_checkpoint", {"label": "before risk", "taskId": a}),
        ("save_task_context", {"taskId": a, "updates": {"status": "blocked"}}),
        ("rollback_task", {"taskId": a, "target": {"type": "version", "version": 2}}),
        ("list_checkpoints", {"taskId": a}),
        ("get_task_context", {"taskId": a, "includeVersionHistory": True}),
        ("add_task_relationship", {"sourceTaskId": a, "targetTaskId": b,
                                   "relationshipType": "blocks", "reason": "order"}),
        ("add_task_relationship", {"sourceTaskId": b, "targetTaskId": a,
                                   "relationshipType": "blocks"}),  # a cycle: E1616
        ("get_task_graph", {"taskId": a, "depth": 1}),
        ("check_conflicts", {"taskIds": [a, b], "conflictTypes": ["file_conflict"]}),
        ("report_conflict", {"taskAId": a, "taskBId": b, "severity": "high",
                             "description": "They disagree on the phase",
                             "evidence": {"field": "currentPhase", "expectedValue": "build",
                                          "actualValue": None}}),
        ("switch_task", {"fromTaskId": a, "toTaskId": b,
                         "currentTaskUpdates": {"immediateContext": {"nextStep": "resume"}}}),
        ("get_task_context", {"taskId": f"{prefix}missing"}),  # E1610
        ("save_task_context", {"taskId": a, "updates": {"status": "done"}}),  # E1612
    ]
    return [(tool, call(tool, arguments)) for tool, arguments in steps]


def _answer(result) -> Any:
    return ("error", result.structured_content["error"]["code"]) if result.is_error \
        else result.structured_content


@pytest.mark.slow
def test_each_agent_tool_answers_as_its_registry_tool(live_api):
    url, token = live_api
    with client(url, token) as agent, client(url, token, "/mcp") as full:
        # Prefixes of one length: answers carry a size estimate.
        via_agent = _scenario(lambda tool, args: _answer(agent.call(tool, args)), "lean-")
        via_registry = _scenario(
            lambda tool, args: _answer(full.call(CATALOGUE[tool], args)), "full-")
    assert {tool for tool, _ in via_agent} == set(CATALOGUE)
    errors = [answer for _, answer in via_agent if isinstance(answer, tuple)]
    assert errors == [("error", "E1616"), ("error", "E1610"), ("error", "E1612")]
    for (tool, lean), (_, registry_answer) in zip(via_agent, via_registry, strict=True):
        assert _normal(lean, "lean-") == _normal(registry_answer, "full-"), tool
    answers = dict(via_agent)
    assert answers["check_conflicts"]["detected"], answers["check_conflicts"]
    assert answers["switch_task"]["newTask"]["taskId"] == "lean-two"
    assert answers["switch_task"]["previousTask"]["saved"] is True


@pytest.mark.slow
def test_the_project_header_works_on_mcp_agent(live_api):
    url, token = live_api
    with client(url, token, "/mcp") as full:
        full.ok("create_project", {"projectId": "lean-project", "name": "Lean"})
    with client(url, token, headers={CLIENT_PROJECT_HEADER: "lean-project"}) as agent:
        agent.ok("create_task", {"taskId": "lean-1", "name": "In the header's project"})
        loaded = agent.ok("get_task_context", {"taskId": "lean-1"})
        global_only = agent.ok("get_task_context", {})
    assert loaded["projectId"] == global_only["projectId"] == "lean-project"
    with client(url, token) as agent:
        agent.ok("create_task", {"taskId": "lean-2", "name": "No header"})
        assert agent.ok("get_task_context", {"taskId": "lean-2"})["projectId"] \
            == "story-portal-app"


@pytest.mark.slow
def test_a_token_limited_to_a_project_keeps_its_limits_on_mcp_agent(live_api):
    from foundation.core.models import ApiToken, TokenScope

    url, token = live_api
    with client(url, token, "/mcp") as full:
        for key in ("lean-a", "lean-b"):
            full.ok("create_project", {"projectId": key, "name": key})
        full.ok("create_task", {"taskId": "b1", "name": "b1", "projectId": "lean-b"})
    _, limited = ApiToken.issue("lean-limited", TokenScope.WRITE, ["lean-a"])
    with client(url, limited) as agent:
        foreign = agent.call("get_task_context", {"taskId": "b1"})
        write = agent.call("save_task_context", {"taskId": "b1",
                                                 "updates": {"currentPhase": "x"}})
        own = agent.ok("create_task", {"taskId": "a1", "name": "a1"})
    assert foreign.structured_content["error"]["code"] == "E1610"
    assert write.structured_content["error"]["code"] == "E1610"
    assert own["projectId"] == "lean-a"
    with client(url, limited, headers={CLIENT_PROJECT_HEADER: "lean-b"}) as agent:
        named = agent.call("get_task_context", {})
    assert named.is_error and named.structured_content["error"]["code"] == "E1608"


# -- stdio -----------------------------------------------------------------------------------

@pytest.mark.slow
def test_mcp_stdio_agent_tools_serves_the_catalogue(transactional_db):
    params = StdioServerParameters(
        command=sys.executable, args=["manage.py", "mcp_stdio", "--agent-tools"],
        env=_env_for_test_database(), cwd=str(ROOT))

    async def session_calls():
        with open(os.devnull, "w") as errlog:
            async with (stdio_client(params, errlog=errlog) as streams,
                        ClientSession(streams[0], streams[1]) as session):
                await session.initialize()
                listed = await session.list_tools()
                created = await session.call_tool("create_task", {"taskId": "stdio-lean",
                                                                  "name": "via stdio"})
                loaded = await session.call_tool("get_task_context", {"taskId": "stdio-lean"})
                hook_only = await session.call_tool("heartbeat", {"sessionId": "s"})
                return listed, created, loaded, hook_only

    listed, created, loaded, hook_only = anyio.run(session_calls)
    assert [t.name for t in listed.tools] == list(CATALOGUE)
    assert not created.is_error and created.structured_content["version"] == 1
    assert not loaded.is_error and loaded.structured_content["task"]["taskId"] == "stdio-lean"
    assert hook_only.is_error and hook_only.content[0].text.startswith("E1615: ")
