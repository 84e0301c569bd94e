"""The official TypeScript MCP client (@modelcontextprotocol/sdk, pinned in
tests/clients/js) against a live server, every tool, success and error results.

The SDK validates every result's structuredContent, errors included, against the listed
outputSchema (Ajv with formats) and throws -32602 when it does not conform.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from orchestrator.core.tools import registry
from tests.clients import conformance


def run_node_client(directory, url: str, token: str) -> dict:
    completed = subprocess.run(
        [shutil.which("node"), "conformance.mjs"], cwd=directory, capture_output=True,
        text=True, timeout=180,
        env={**os.environ, "ORCHESTRATOR_URL": url, "ORCHESTRATOR_TOKEN": token})
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout)


@pytest.mark.slow
def test_typescript_sdk_client_accepts_every_result(live_api, node_client_dir):
    url, token = live_api
    conformance.seed_crashed_session()
    report = run_node_client(node_client_dir, url, token)
    advertised = {tool["name"]: tool["outputSchema"] for tool in report["tools"]}
    assert set(advertised) == {t.name for t in registry.tools()}
    outcomes = []
    for item in report["outcomes"]:
        expect = item["expect"] or registry.get_tool(item["tool"]).validation_code
        outcomes.append(conformance.Outcome(item["tool"], item["arguments"], expect,
                                            item["isError"], item["structuredContent"],
                                            client_error=item["clientError"]))
    assert len(outcomes) == len(conformance.steps()) + len(registry.tools())
    problems = conformance.all_problems(outcomes, advertised)
    assert not problems, "\n".join(problems)
    assert conformance.unreached_parts(outcomes) == []
