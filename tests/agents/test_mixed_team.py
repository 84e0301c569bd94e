"""A mixed team in one repository: three clones on three tasks, Claude Code, Codex CLI and
Gemini CLI editing the same file (app.py) in turn, each still live when the next edits.
Under the warn policy the second and third are warned (the file, the other task and its
agent kind) and a file_conflict is stored; under block the edits are refused."""

from __future__ import annotations

import contextlib
import time
import uuid

import pytest

from conflicts.models import ContextConflict
from tests.agent_runner import finish
from tests.agents.setup_helpers import agent_setup
from tests.claude_code.conftest import clone_project, make_project
from tests.claude_code.orchestrated import register_project
from tests.claude_code.test_claude_code_e2e import create_task, processes_running
from tests.claude_code.test_live_coordination import (
    ORIGINAL,
    REFUSED,
    WARNING,
    first_agent_holding_app_py,
    kill_holds,
    set_policy,
)
from tests.model_standins import CodexStandIn, GeminiStandIn, call, say
from tests.waiting import wait_for

pytestmark = [pytest.mark.claude_code, pytest.mark.codex, pytest.mark.gemini]


def hold(go, marker: str) -> str:
    """Runs until ``go`` exists; ``marker`` an argument, so the process's command line
    names it whether or not the shell execs it."""
    return (f"python3 -c 'import os, sys, time; [time.sleep(0.1) for _ in range(600) "
            f"if not os.path.exists(\"{go}\")]' {marker}")


@pytest.mark.parametrize("policy", ["warn", "block"])
def test_claude_code_then_codex_then_gemini_on_one_file(
        policy, claude, codex, gemini, tmp_path, orchestrator, api_token_live):
    from tests.claude_code.orchestrated import claude_setup

    alpha = make_project(tmp_path / "alpha", "git@github.com:acme/team.git")
    beta, gamma = clone_project(alpha, tmp_path / "beta"), clone_project(alpha, tmp_path / "gamma")
    for project, task in ((alpha, "alpha"), (beta, "beta"), (gamma, "gamma")):
        create_task(orchestrator, api_token_live, project, task, f"{task} changes")
    claude_setup(alpha, orchestrator, api_token_live, "alpha")
    agent_setup(codex, beta, orchestrator, api_token_live, "beta")
    agent_setup(gemini, gamma, orchestrator, api_token_live, "gamma")
    set_policy(orchestrator, api_token_live, register_project(orchestrator, api_token_live, alpha),
               policy)

    go, marker = tmp_path / "go-codex", f"MARKER-HOLD-{uuid.uuid4().hex[:12]}"
    codex_steps = [call("apply_patch", "*** Begin Patch\n*** Update File: app.py\n@@\n"
                        "-    return 'hello'\n+    return 'hello from beta'\n*** End Patch\n"),
                   call("exec_command", {"cmd": hold(go, marker), "yield_time_ms": 120000}),
                   say("beta done.")]
    gemini_steps = [call("replace", {"file_path": str(gamma / "app.py"),
                                     "old_string": "    return 'hello'",
                                     "new_string": "    return 'hello from gamma'",
                                     "instruction": "edit"}), say("gamma done.")]
    with first_agent_holding_app_py(claude, alpha, "alpha", tmp_path) as (
            _, claude_process, alpha_session, release_claude), \
            CodexStandIn(codex_steps) as codex_model, GeminiStandIn(gemini_steps) as gemini_model:
        started = time.monotonic()
        codex_process = codex.start(beta, "edit app.py, then build", codex_model.url,
                                    env={"ORCHESTRATOR_FLUSH_SECONDS": "0"})
        try:
            assert wait_for(lambda: processes_running(marker) or codex_process.poll() is not None,
                            timeout=60, interval=0.1)
            assert codex_process.poll() is None, finish(codex_process, started)
            gemini_run = gemini.run(gamma, "edit app.py", gemini_model.url)
        finally:
            go.touch()
            with contextlib.suppress(AssertionError):
                finish(codex_process, started, timeout=60)
            kill_holds(marker)
        assert claude_process.poll() is None  # Claude Code was live all along
        release_claude()
        finish(claude_process, time.monotonic(), timeout=60)
    gemini_run.check()

    after_codex_edit = codex_model.scripted_requests[1].text()
    after_gemini_edit = gemini_model.scripted_requests[1].text()
    if policy == "warn":
        # Codex: PreToolUse additionalContext, a developer message before the patch's output.
        assert WARNING in after_codex_edit and "`app.py`" in after_codex_edit
        assert f"claude-code session `{alpha_session}` on task `alpha`" in after_codex_edit
        # Gemini: BeforeTool cannot inject; the check's warning comes with the edit's
        # result (AfterTool <hook_context>), naming both other agents.
        assert WARNING in after_gemini_edit and "`app.py`" in after_gemini_edit
        assert "on task `alpha`" in after_gemini_edit and "claude-code session" in after_gemini_edit
        assert "codex session" in after_gemini_edit and "on task `beta`" in after_gemini_edit
        assert (beta / "app.py").read_text() != ORIGINAL
        assert (gamma / "app.py").read_text() != ORIGINAL
        pairs = {frozenset((c.task_a_id, c.task_b_id)) for c in
                 ContextConflict.objects.filter(conflict_type="file_conflict")}
        assert frozenset(("alpha", "beta")) in pairs and any("gamma" in p for p in pairs), pairs
    else:
        # Both refuse the edit: the file is unchanged and the model reads the reason.
        assert REFUSED in after_codex_edit and "on task `alpha`" in after_codex_edit
        assert "Command blocked by PreToolUse hook" in after_codex_edit
        assert REFUSED in after_gemini_edit and "Tool execution blocked" in after_gemini_edit
        assert (beta / "app.py").read_text() == ORIGINAL
        assert (gamma / "app.py").read_text() == ORIGINAL
