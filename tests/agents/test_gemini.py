"""The real Gemini CLI with our hooks after ``claude_setup --agent gemini``, against the web
server in its own process and a scripted Gemini API: what the orchestrator records, what
reaches the model, the crash path."""

from __future__ import annotations

import json

import pytest

from contexts.models import TaskContext
from sessions.models import ActiveSession, SessionDetail, SessionHandoff
from tests.agent_runner import Gemini
from tests.agents.crash import build_command, crashed_within, kill_agent_mid_build
from tests.agents.setup_helpers import agent_check, agent_setup, mapped_sessions
from tests.agents.test_codex import hook_tools, shared_repo
from tests.claude_code.test_claude_code_e2e import build_marker
from tests.model_standins import GeminiStandIn, gemini_replace, gemini_shell, say

pytestmark = pytest.mark.gemini

NO_TIME_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "600"}


def test_gemini_is_tracked_without_a_task_with_history_keyfiles_and_handoff(
        gemini, tmp_path, orchestrator, api_token_live):
    project = shared_repo(tmp_path)
    output = agent_setup(gemini, project, orchestrator, api_token_live)
    assert "trusted folder" in output, output
    settings = json.loads((project / ".gemini" / "settings.json").read_text())
    assert settings["mcpServers"]["orchestrator"]["httpUrl"].startswith(orchestrator.url)
    check = agent_check(gemini, project)
    assert "6/6 orchestrator hooks" in check and "all good" in check, check

    steps = [gemini_replace(str(project / "shared.py"), '    return "hello " + name',
                            '    return "Hello, " + name'),
             gemini_shell("echo built"), say("Greeting done.")]
    with GeminiStandIn(steps) as model:
        run = gemini.run(project, "greet politely", model.url,
                         env={**NO_TIME_FLUSH, "ORCHESTRATOR_TOKEN": api_token_live}).check()
    assert '"Hello, "' in (project / "shared.py").read_text()
    (entry,) = mapped_sessions(project).values()
    session = ActiveSession.objects.get(session_id=entry["sessionId"])
    assert entry["agentKind"] == "gemini"
    assert Gemini.session_id(run) in mapped_sessions(project)
    assert (session.task_id, session.status, session.project_id) == (
        "shop-main", "ended", "github.com:acme:shop")
    detail = SessionDetail.objects.get(session_id=session.session_id)
    assert (detail.agent_id, detail.agent_kind) == ("gemini", "gemini")
    assert hook_tools(session.session_id) == ["replace", "run_shell_command"]
    assert "shared.py" in TaskContext.objects.get(task_id="shop-main").key_files
    handoff = SessionHandoff.objects.get(from_session_id=session.session_id)
    assert "Gemini CLI session ended" in handoff.summary and "greet politely" in handoff.summary
    # Gemini's MCP client reached /mcp/agent with the entry setup wrote ($ORCHESTRATOR_TOKEN).
    offered = [f["name"] for t in model.scripted_requests[0].body["tools"]
               for f in t.get("functionDeclarations", [])]
    assert {"mcp_orchestrator_get_task_context", "mcp_orchestrator_save_task_context"} <= set(
        offered), offered
    # SessionStart's context reached the model, in the prompt as <hook_context>.
    first = model.scripted_requests[0].text()
    assert session.session_id in first and "this Gemini CLI session" in first


def test_gemini_killed_mid_build_is_known_crashed_within_30_s_and_resumed_next_time(
        gemini, tmp_path, orchestrator, api_token_live):
    project = shared_repo(tmp_path, "crashy")
    agent_setup(gemini, project, orchestrator, api_token_live)
    marker = build_marker()
    steps = [gemini_replace(str(project / "shared.py"), '    return "hello " + name',
                            '    return "half " + name'),
             gemini_shell(build_command(marker)), say("never reached")]
    with GeminiStandIn(steps) as model:
        process = gemini.start(project, "rewrite the greeting", model.url)
        crashed_id, killed = kill_agent_mid_build(project, process, marker)
    assert crashed_within(crashed_id, killed)

    with GeminiStandIn([say("Recovered.")]) as model:
        gemini.run(project, "carry on", model.url).check()
    seen = model.scripted_requests[0].text()
    assert "Recovery Required: crash" in seen and crashed_id in seen
    assert marker in seen
    assert hook_tools(crashed_id) == ["replace"]
    assert ActiveSession.objects.get(session_id=crashed_id).status == "recovered"
