"""The official Python MCP client (``mcp``) against a live server, every tool.

The client validates a successful result's structuredContent against the outputSchema it
listed and raises when it does not conform; it skips error results, so those are checked
here against the same listed schema.
"""

from __future__ import annotations

import pytest

from orchestrator.core.tools import registry
from tests import mcp_client
from tests.clients import conformance


@pytest.mark.slow
def test_python_sdk_client_accepts_every_result(live_api):
    url, token = live_api
    conformance.seed_crashed_session()
    with mcp_client.open_session(url, token) as (portal, session):
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
    assert set(advertised) == {t.name for t in registry.tools()}
    problems = conformance.all_problems(outcomes, advertised)
    assert not problems, "\n".join(problems)
    assert conformance.unreached_parts(outcomes) == []
    assert sum(o.is_error for o in outcomes) > len(registry.tools())
