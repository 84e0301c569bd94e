"""The official Python MCP client (``mcp``) against a live server, every tool, at every
protocol revision it speaks: 2026-07-28 (``server/discover``, no handshake), 2025-11-25 and
2025-06-18 (``initialize``); see python_client.py for how each is chosen.

The client validates a successful result's structuredContent against the outputSchema it
listed and raises when it does not conform; it skips error results, so those are checked
here against the same listed schema. The wire record proves the revision was the one spoken.
"""

from __future__ import annotations

import pytest

from foundation.core.tools import registry
from tests.clients import conformance, python_client, revisions


@pytest.mark.slow
@pytest.mark.parametrize("revision", revisions.REVISIONS)
def test_python_sdk_client_accepts_every_result(live_api, revision):
    url, token = live_api
    conformance.seed_crashed_session()
    with python_client.open_session(url, token, revision) as (portal, session, recorder):
        assert session.protocol_version == revision
        if revision == revisions.MODERN:
            assert session.initialize_result is None
            assert revision in session.discover_result.supported_versions
        else:
            assert session.discover_result is None
            assert session.initialize_result.protocol_version == revision
        listed = portal.call(session.list_tools).tools
        advertised = {tool.name: tool.output_schema for tool in listed}

        def call(tool: str, arguments: dict) -> conformance.Outcome:
            try:
                result = portal.call(session.call_tool, tool, arguments)
            except RuntimeError as exc:  # the SDK's output-schema check
                return conformance.Outcome(tool, arguments, "", False, None,
                                           client_error=str(exc)[:500])
            return conformance.Outcome(tool, arguments, "", result.is_error,
                                       result.structured_content)

        outcomes = conformance.run_scenario(call)
    problems = revisions.scenario_problems(outcomes, advertised)
    problems += revisions.wire_problems(recorder.wire, revision)
    assert not problems, "\n".join(problems)
    assert sum(o.is_error for o in outcomes) > len(registry.tools())
    assert revisions.methods(recorder.wire).count("tools/call") == len(outcomes)


# The high-level Client: "auto" (its default) must find 2026-07-28 here through
# server/discover; a pinned 2026-07-28 asks nothing and goes straight to work (stateless);
# "legacy" is the initialize handshake at 2025-11-25.
@pytest.mark.slow
@pytest.mark.parametrize(("mode", "revision", "discovered"), [
    ("auto", revisions.MODERN, True),
    (revisions.MODERN, revisions.MODERN, False),
    ("legacy", "2025-11-25", True),
])
def test_python_sdk_client_modes(live_api, mode, revision, discovered):
    url, token = live_api
    with python_client.open_client(url, token, mode) as (portal, client, recorder):
        assert client.protocol_version == revision
        listed = {tool.name for tool in portal.call(client.list_tools).tools}
        created = portal.call(client.call_tool, "create_task",
                              {"taskId": "mode-task", "name": "Negotiated"})
        fetched = portal.call(client.call_tool, "get_task_graph", {"taskId": "mode-task"})
        refused = portal.call(client.call_tool, "get_task_graph", {"unexpectedField": True})
    assert listed == {t.name for t in registry.tools()}
    assert not created.is_error and not fetched.is_error, (created, fetched)
    assert fetched.structured_content["focus"]["task"]["taskId"] == "mode-task"
    assert refused.is_error
    assert refused.structured_content["error"]["code"] == \
        registry.get_tool("get_task_graph").validation_code
    problems = revisions.wire_problems(recorder.wire, revision, discovered=discovered)
    assert not problems, "\n".join(problems)
