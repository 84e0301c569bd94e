"""The handoff note crosses agent kinds: a Codex CLI session's note reaches the next Claude
Code session of the project, and a Claude Code session's the next Codex session."""

from __future__ import annotations

import pytest

from sessions.models import SessionHandoff
from tests.agents.setup_helpers import agent_setup
from tests.claude_code.conftest import make_project
from tests.claude_code.orchestrated import claude_setup
from tests.model_standins import ClaudeStandIn, CodexStandIn, call, codex_shell, say

pytestmark = [pytest.mark.claude_code, pytest.mark.codex]


def test_codex_to_claude_code_and_back(claude, codex, tmp_path, orchestrator, api_token_live):
    project = make_project(tmp_path / "relay", "https://github.com/acme/relay.git")
    claude_setup(project, orchestrator, api_token_live)
    agent_setup(codex, project, orchestrator, api_token_live)

    with CodexStandIn([codex_shell("echo MARKER-CODEX-WORK"),
                       say("Codex left MARKER-CODEX-ANSWER.")]) as model:
        codex.run(project, "start the relay MARKER-CODEX-PROMPT", model.url).check()
    note = SessionHandoff.objects.order_by("-created_at").first()
    assert "Codex CLI session ended" in note.summary

    with ClaudeStandIn([call("Bash", command="echo claude", description="work"),
                        say("Claude left MARKER-CLAUDE-ANSWER.")]) as model:
        claude.run(project, "carry the relay on MARKER-CLAUDE-PROMPT", model.url)
    seen = model.scripted_requests[0].text()
    assert "Handoff note from a " in seen and "session of this project" in seen
    assert "Codex CLI session ended" in seen and "MARKER-CODEX-ANSWER" in seen
    assert "MARKER-CODEX-PROMPT" in seen

    with CodexStandIn([say("Done.")]) as model:
        codex.run(project, "finish the relay", model.url).check()
    seen = model.scripted_requests[0].text()
    assert "Handoff note from a " in seen and "session of this project" in seen
    assert "Claude Code session ended" in seen and "MARKER-CLAUDE-ANSWER" in seen
