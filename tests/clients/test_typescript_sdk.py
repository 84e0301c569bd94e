"""The official TypeScript MCP SDK 1.x (@modelcontextprotocol/sdk, pinned in tests/clients/js)
against a live server, every tool, success and error results, at the revisions it speaks.

The SDK validates every result's structuredContent, errors included, against the listed
outputSchema (Ajv with formats) and throws -32602 when it does not conform.

1.x speaks only the initialize handshake: it offers 2025-11-25 (its LATEST_PROTOCOL_VERSION)
and has no option to offer another, so the 2025-06-18 run rewrites the offer on the wire
(js/conformance.mjs) and the client then runs the session at the revision the server
answered. It cannot speak 2026-07-28 at all (no server/discover, no per-request envelope);
``test_typescript_sdk_1x_cannot_speak_2026_07_28`` asserts that, and that the server, which
speaks 2026-07-28, still serves it over the handshake.
"""

from __future__ import annotations

import pytest

from tests.clients import conformance, revisions


@pytest.mark.slow
@pytest.mark.parametrize("revision", revisions.HANDSHAKE)
def test_typescript_sdk_client_accepts_every_result(live_api, node_client_dir, revision):
    url, token = live_api
    conformance.seed_crashed_session()
    report = revisions.run_node_client(node_client_dir, url, token, revision)
    assert report["negotiated"]["version"] == revision
    assert report["sdk"]["rewroteOffer"] == (
        None if revision == report["sdk"]["latestProtocolVersion"] else revision)
    outcomes, advertised = revisions.node_outcomes(report)
    problems = revisions.scenario_problems(outcomes, advertised)
    problems += revisions.wire_problems(report["wire"], revision)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_typescript_sdk_1x_cannot_speak_2026_07_28(live_api, node_client_dir):
    url, token = live_api
    conformance.seed_crashed_session()
    report = revisions.run_node_client(node_client_dir, url, token, None)  # the SDK's default
    sdk = report["sdk"]
    assert sdk["package"] == "@modelcontextprotocol/sdk" and sdk["version"].startswith("1.")
    # The limitation: 2026-07-28 is not among the revisions 1.x knows, and it never probes.
    assert revisions.MODERN not in sdk["supportedProtocolVersions"]
    assert sdk["latestProtocolVersion"] == "2025-11-25"
    assert "server/discover" not in revisions.methods(report["wire"])
    # ... so it gets the newest handshake revision, untouched, and every tool works.
    assert sdk["rewroteOffer"] is None
    assert report["negotiated"]["version"] == "2025-11-25"
    outcomes, advertised = revisions.node_outcomes(report)
    problems = revisions.scenario_problems(outcomes, advertised)
    problems += revisions.wire_problems(report["wire"], "2025-11-25")
    assert not problems, "\n".join(problems)
