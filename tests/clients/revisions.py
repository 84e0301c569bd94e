"""MCP protocol revisions as the client tests see them on the wire.

Every client test records each HTTP request its client made to /mcp as a wire entry (the
TypeScript scripts with ``recordingFetch`` in scenario.mjs, the Python client with
``python_client.WireRecorder``), all in one shape::

    {"httpMethod": "POST", "rpcMethod": "tools/call", "protocolHeader": "2025-11-25",
     "metaProtocolVersion": None, "offeredVersion": None, "status": 200,
     "result": None, "error": None}

``result`` is the answer to ``initialize`` and ``server/discover``; ``error`` is any JSON-RPC
error. ``wire_problems`` says where a recorded conversation is not the one the revision
prescribes: for 2026-07-28 (stateless) ``server/discover`` and then requests that each carry
the revision in the ``MCP-Protocol-Version`` header and in ``params._meta``, never an
``initialize`` handshake; for the 2025 revisions an ``initialize`` offering the revision, an
answer naming it, and the revision's header on every later request.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from foundation.core.tools import registry
from tests.clients import conformance

MODERN = "2026-07-28"  # server/discover, a per-request envelope, no initialize
HANDSHAKE = ("2025-11-25", "2025-06-18")  # the initialize handshake
REVISIONS = (MODERN, *HANDSHAKE)
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
NEGOTIATION = ("server/discover", "initialize", "notifications/initialized")


def posts(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in wire if entry["httpMethod"] == "POST"]


def methods(wire: list[dict[str, Any]]) -> list[str | None]:
    return [entry["rpcMethod"] for entry in posts(wire)]


def wire_problems(wire: list[dict[str, Any]], revision: str, *,
                  discovered: bool = True) -> list[str]:
    """What in a recorded conversation does not follow ``revision``.

    ``discovered=False``: a 2026-07-28 client that adopted the revision without asking
    (a pinned, zero-round-trip connect), so no ``server/discover`` either.
    """
    sent = posts(wire)
    found = []
    if not sent:
        return ["no POST reached /mcp"]
    for entry in sent:
        if entry["status"] not in (200, 202) or entry["error"]:
            found.append(f"{entry['rpcMethod']} answered {entry['status']}: {entry['error']}")
    if revision == MODERN:
        first, envelope = sent[0], sent
        if discovered:
            answer = first["result"] or {}
            if first["rpcMethod"] != "server/discover":
                found.append(f"first request is {first['rpcMethod']}, not server/discover")
            elif revision not in answer.get("supportedVersions", []):
                found.append(f"server/discover answered {answer} without {revision}")
        elif "server/discover" in methods(wire):
            found.append("a pinned connect sent server/discover")
        for method in ("initialize", "notifications/initialized"):
            if method in methods(wire):
                found.append(f"{method} sent at {revision}")
    else:
        first, envelope = sent[0], []
        answer = first["result"] or {}
        if first["rpcMethod"] != "initialize":
            found.append(f"first request is {first['rpcMethod']}, not initialize")
        elif first["offeredVersion"] != revision:
            found.append(f"initialize offered {first['offeredVersion']}, not {revision}")
        elif answer.get("protocolVersion") != revision:
            found.append(f"initialize offering {revision} answered {answer}")
        if "server/discover" in methods(wire):
            found.append(f"server/discover sent at {revision}")
        for entry in sent[1:]:
            if entry["metaProtocolVersion"] is not None:
                found.append(f"{entry['rpcMethod']} carries a 2026-07-28 _meta envelope")
    for entry in sent[1:] if revision != MODERN else sent:
        if entry["protocolHeader"] != revision:
            found.append(f"{entry['rpcMethod']} sent MCP-Protocol-Version "
                         f"{entry['protocolHeader']}")
    for entry in envelope:
        if entry["metaProtocolVersion"] != revision:
            found.append(f"{entry['rpcMethod']} _meta names {entry['metaProtocolVersion']}")
    work = [m for m in methods(wire) if m not in NEGOTIATION]
    if "tools/list" not in work or "tools/call" not in work:
        found.append(f"not both tools/list and tools/call after negotiating: {work}")
    return list(dict.fromkeys(found))  # a broken header repeats once per call


def run_node_client(directory: Path, url: str, token: str, revision: str | None) -> dict:
    """Runs ``conformance.mjs`` in ``directory`` (an npm-installed client folder)."""
    env = {**os.environ, "ORCHESTRATOR_URL": url, "ORCHESTRATOR_TOKEN": token}
    env.pop("ORCHESTRATOR_PROTOCOL", None)
    if revision:
        env["ORCHESTRATOR_PROTOCOL"] = revision
    completed = subprocess.run([shutil.which("node"), "conformance.mjs"], cwd=directory,
                               capture_output=True, text=True, timeout=180, env=env)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout)


def node_outcomes(report: dict) -> tuple[list[conformance.Outcome], dict[str, Any]]:
    """The scenario outcomes of a node client's report, and the outputSchemas it listed."""
    advertised = {tool["name"]: tool["outputSchema"] for tool in report["tools"]}
    outcomes = []
    for item in report["outcomes"]:
        expect = item["expect"] or registry.get_tool(item["tool"]).validation_code
        outcomes.append(conformance.Outcome(item["tool"], item["arguments"], expect,
                                            item["isError"], item["structuredContent"],
                                            client_error=item["clientError"]))
    return outcomes, advertised


def scenario_problems(outcomes: list[conformance.Outcome],
                      advertised: dict[str, Any]) -> list[str]:
    """Everything the conformance checks find in one client's run of the whole scenario."""
    found = []
    if set(advertised) != {t.name for t in registry.tools()}:
        found.append(f"tools/list gave {sorted(advertised)}")
    if len(outcomes) != len(conformance.steps()) + len(registry.tools()):
        found.append(f"{len(outcomes)} outcomes")
    found += conformance.all_problems(outcomes, advertised)
    found += [f"scenario never reached {tool} {path}"
              for tool, path in conformance.unreached_parts(outcomes)]
    return found
