"""The real Codex CLI with our hooks after ``claude_setup --agent codex``, against the web
server in its own process and a scripted Responses API: what the orchestrator records,
what reaches the model, the crash path."""

from __future__ import annotations

import json

import pytest

from contexts.models import TaskContext
from sessions.models import ActiveSession, SessionDetail, SessionHandoff, ToolInvocation
from tests.agent_runner import Codex
from tests.agents.crash import build_command, crashed_within, kill_agent_mid_build
from tests.agents.setup_helpers import agent_check, agent_setup, mapped_sessions
from tests.claude_code.conftest import make_project
from tests.claude_code.test_claude_code_e2e import build_marker
from tests.model_standins import (
    CodexStandIn,
    codex_namespaced,
    codex_patch,
    codex_shell,
    codex_tool_search,
    say,
)

pytestmark = pytest.mark.codex

NO_TIME_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "600"}


def hook_tools(session_id: str) -> list[str]:
    return list(ToolInvocation.objects.filter(session_id=session_id, transport="hook")
                .order_by("id").values_list("tool", flat=True))


def shared_repo(tmp_path, name="shop"):
    project = make_project(tmp_path / name, f"https://github.com/acme/{name}.git")
    (project / "shared.py").write_text('def greet(name):\n    return "hello " + name\n')
    return project


def test_codex_is_tracked_without_a_task_with_history_keyfiles_and_handoff(
        codex, tmp_path, orchestrator, api_token_live):
    project = shared_repo(tmp_path)
    output = agent_setup(codex, project, orchestrator, api_token_live)
    assert "Codex trusts the project and 8/8 orchestrator hooks" in output, output
    check = agent_check(codex, project)
    assert "Codex reports 8/8 orchestrator hooks trusted" in check and "all good" in check, check

    steps = [codex_patch("shared.py", '    return "hello " + name',
                         '    return "Hello, " + name'),
             codex_shell("echo built"), say("Greeting done.")]
    with CodexStandIn(steps) as model:
        run = codex.run(project, "greet politely", model.url, env=NO_TIME_FLUSH).check()
    assert '"Hello, "' in (project / "shared.py").read_text()
    (entry,) = mapped_sessions(project).values()
    session = ActiveSession.objects.get(session_id=entry["sessionId"])
    assert entry["agentKind"] == "codex"
    assert (session.task_id, session.status, session.project_id) == (
        "shop-main", "ended", "github.com:acme:shop")
    detail = SessionDetail.objects.get(session_id=session.session_id)
    assert (detail.agent_id, detail.agent_kind) == ("codex", "codex")
    assert hook_tools(session.session_id) == ["apply_patch", "Bash"]
    assert "shared.py" in TaskContext.objects.get(task_id="shop-main").key_files
    handoff = SessionHandoff.objects.get(from_session_id=session.session_id)
    assert "Codex CLI session ended" in handoff.summary and "greet politely" in handoff.summary
    # SessionStart's context reached the model as a developer message.
    first = model.scripted_requests[0].text()
    assert session.session_id in first and "this Codex CLI session" in first
    assert Codex.thread_id(run) in mapped_sessions(project)


def test_codex_reaches_the_orchestrator_mcp_tools_through_its_tool_search(
        codex, tmp_path, orchestrator, api_token_live):
    """Codex 0.171 offers MCP tools only through its client-run ``tool_search``: the model
    searches, Codex answers with the tools of the MCP entry setup wrote (namespace
    ``mcp__orchestrator``, found by asking /mcp/agent with $ORCHESTRATOR_TOKEN), and the
    model's calls of them reach the service."""
    project = shared_repo(tmp_path, "mcp")
    agent_setup(codex, project, orchestrator, api_token_live)
    marker = "MARKER-SAVED-BY-CODEX-OVER-MCP"
    steps = [codex_tool_search("orchestrator task context save"),
             codex_namespaced("mcp__orchestrator", "get_task_context",
                              {"taskId": "mcp-main", "depth": "hot"}),
             codex_namespaced("mcp__orchestrator", "save_task_context", {
                 "taskId": "mcp-main", "changeSummary": marker,
                 "updates": {"immediateContext": {"workingOn": marker}}}),
             say("Saved.")]
    with CodexStandIn(steps) as model:
        codex.run(project, "save progress", model.url,
                  env={**NO_TIME_FLUSH, "ORCHESTRATOR_TOKEN": api_token_live}).check()
    requests = model.scripted_requests
    assert len(requests) == 4, [r.text()[-500:] for r in requests]
    # Not offered up front: only tool_search is.
    upfront = requests[0].body["tools"]
    assert any(t["type"] == "tool_search" for t in upfront), upfront
    assert not any("get_task_context" in json.dumps(t) for t in upfront)
    # Codex answered the search with our tools under the namespace of its MCP entry.
    (found,) = [item for item in requests[1].body["input"]
                if item.get("type") == "tool_search_output"]
    (namespace,) = [t for t in found["tools"] if t.get("name") == "mcp__orchestrator"]
    names = {t["name"] for t in namespace["tools"]}
    assert {"get_task_context", "save_task_context"} <= names, names
    # The service answered the read (the task's context) and stored the write.
    outputs = [item for item in requests[2].body["input"]
               if item.get("type") == "function_call_output"]
    assert "mcp-main" in json.dumps(outputs[-1]), outputs[-1]
    context = TaskContext.objects.get(task_id="mcp-main")
    assert context.immediate_context["workingOn"] == marker, context.immediate_context


def test_codex_killed_mid_build_is_known_crashed_within_30_s_and_resumed_next_time(
        codex, tmp_path, orchestrator, api_token_live):
    project = shared_repo(tmp_path, "crashy")
    agent_setup(codex, project, orchestrator, api_token_live)
    marker = build_marker()
    steps = [codex_patch("shared.py", '    return "hello " + name', '    return "half " + name'),
             codex_shell(build_command(marker)), say("never reached")]
    with CodexStandIn(steps) as model:
        process = codex.start(project, "rewrite the greeting", model.url)
        crashed_id, killed = kill_agent_mid_build(project, process, marker)
    assert crashed_within(crashed_id, killed)

    with CodexStandIn([say("Recovered.")]) as model:
        codex.run(project, "carry on", model.url).check()
    seen = model.scripted_requests[0].text()
    assert "Recovery Required: crash" in seen and crashed_id in seen
    assert marker in seen  # the tool call that was running when it died
    assert hook_tools(crashed_id) == ["apply_patch"]
    assert ActiveSession.objects.get(session_id=crashed_id).status == "recovered"


def test_codex_compactions_are_counted_and_every_second_one_reloads_everything(
        codex, tmp_path, orchestrator, api_token_live):
    """The stand-in reports more input tokens than model_auto_compact_token_limit: Codex
    compacts before its next request (PreCompact, PostCompact, SessionStart compact)."""
    project = shared_repo(tmp_path, "compacting")
    agent_setup(codex, project, orchestrator, api_token_live)
    steps = [codex_shell("echo one", input_tokens=250000),
             codex_shell("echo two", input_tokens=250000), say("Counted.")]
    with CodexStandIn(steps) as model:
        codex.run(project, "count", model.url).check()
    (entry,) = mapped_sessions(project).values()
    detail = SessionDetail.objects.get(session_id=entry["sessionId"])
    assert detail.compaction_count == 2
    seen = model.all_text()
    assert f"compaction 1 of orchestrator session {entry['sessionId']}" in seen
    assert "This is a full reload" in seen  # the second one
