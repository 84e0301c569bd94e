"""The official TypeScript MCP client v2 (@modelcontextprotocol/client, pinned in
tests/clients/js-v2) against a live server, every tool, at every revision it speaks.

v2 chooses the revision with its own options (js-v2/conformance.mjs): 2026-07-28 by pinning
``versionNegotiation`` (``server/discover`` must offer it, no fallback), a 2025 revision by
``supportedProtocolVersions`` (``initialize`` offers it and accepts nothing else), and its
``"auto"`` negotiation must find 2026-07-28 here. It validates a successful result's
structuredContent against the listed outputSchema (Ajv) and throws -32602 when it does not
conform; error results are checked here against the same listed schema.
"""

from __future__ import annotations

import pytest

from tests.clients import conformance, revisions


@pytest.mark.slow
@pytest.mark.parametrize(("requested", "revision"), [
    *[(revision, revision) for revision in revisions.REVISIONS],
    ("auto", revisions.MODERN),
])
def test_typescript_client_v2_accepts_every_result(live_api, node_client_v2_dir, requested,
                                                   revision):
    url, token = live_api
    conformance.seed_crashed_session()
    report = revisions.run_node_client(node_client_v2_dir, url, token, requested)
    assert report["sdk"]["package"] == "@modelcontextprotocol/client"
    assert report["sdk"]["version"].startswith("2.")
    negotiated = report["negotiated"]
    assert negotiated["version"] == revision
    if revision == revisions.MODERN:
        assert negotiated["era"] == "modern"
        assert revision in negotiated["discover"]["supportedVersions"]
    else:
        assert negotiated["era"] == "legacy" and negotiated["discover"] is None
    outcomes, advertised = revisions.node_outcomes(report)
    problems = revisions.scenario_problems(outcomes, advertised)
    problems += revisions.wire_problems(report["wire"], revision)
    assert not problems, "\n".join(problems)
