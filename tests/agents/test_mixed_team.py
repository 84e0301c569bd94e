"""A mixed team in one repository: three clones on three tasks, Claude Code (alpha), Codex
CLI (beta) and Gemini CLI (gamma) edit ``shared.py`` in turn, each still live when the next
edits.

Under the warn policy the check before the second and third edits warns their models
(the file, the other task and its agent kind) and records a file_conflict at once: it is
stored within one flush interval of the edit, while the agent's own activity is not
flushed at all (``ORCHESTRATOR_FLUSH_SECONDS`` 600), so the check made it. Under the block
policy both refuse the edit (Codex: PreToolUse deny; Gemini: BeforeTool deny) and nothing
is claimed or recorded."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
from django.db import connection

from claims.models import FileClaim
from conflicts.models import ContextConflict
from orchestrator_hook import lite
from sessions.models import SessionEvent
from tests.agent_runner import finish
from tests.agent_runner import finish as finish_agent
from tests.agents.setup_helpers import agent_setup, mapped_sessions
from tests.claude_code.conftest import GIT, clone_project, make_project
from tests.claude_code.orchestrated import register_project
from tests.claude_code.test_claude_code_e2e import create_task, processes_running
from tests.claude_code.test_live_coordination import (
    EVERY_TOOL_FLUSH,
    REFUSED,
    WARNING,
    hold_command,
    kill_holds,
    only_session,
    set_policy,
)
from tests.model_standins import (
    ClaudeStandIn,
    CodexStandIn,
    GeminiStandIn,
    call,
    codex_patch,
    gemini_replace,
)
from tests.model_standins import Step as AgentStep
from tests.model_standins import Step as ClaudeStep
from tests.model_standins import call as claude_call
from tests.waiting import wait_for

pytestmark = [pytest.mark.claude_code, pytest.mark.codex, pytest.mark.gemini]

SHARED = "def greet():\n    return 'hello'\n"
# One flush: the interval at which a client sends its buffered activity (flushSeconds).
ONE_FLUSH = lite.DEFAULT_FLUSH_SECONDS
# The second and third agents never flush their activity during the run: a conflict
# stored while they work comes from the check before their edit.
NO_TIME_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "600"}
# How long the first two agents may be held live at most (a loaded machine runs Gemini
# slowly): their build commands, then their model's last answer, wait for the release.
HOLD_SECONDS = 240


def team_repository(tmp_path: Path) -> tuple[Path, Path, Path]:
    """One repository with a committed shared.py, and two more clones of it."""
    alpha = make_project(tmp_path / "alpha", "git@github.com:acme/team.git")
    (alpha / "shared.py").write_text(SHARED)
    for argv in (["add", "shared.py"], ["commit", "-q", "-m", "shared"]):
        subprocess.run([*GIT, *argv], cwd=alpha, check=True, capture_output=True)
    return alpha, clone_project(alpha, tmp_path / "beta"), clone_project(alpha, tmp_path / "gamma")


def hold(go: Path, marker: str) -> str:
    """A shell command that runs until ``go`` exists; ``marker`` an argument, so the
    process's command line names it whether or not the shell execs it."""
    return (f"python3 -c 'import os, sys, time; [time.sleep(0.1) for _ in "
            f"range({HOLD_SECONDS * 10}) if not os.path.exists(\"{go}\")]' {marker}")


class ConflictWatch:
    """When the agent's first model request after its edit arrives (the stand-in's
    thread, before it answers), poll for the file_conflicts of ``pairs`` with a deadline
    of one flush interval since the stand-in handed the edit out; ``stored_after``: how
    long after that moment each was stored (its detected_at, the same machine's clock),
    however late the request came."""

    def __init__(self, *pairs: tuple[str, str]) -> None:
        self.pairs = {frozenset(p) for p in pairs}
        self.edit_sent: float | None = None
        self.edit_sent_at: float | None = None  # wall clock, to compare with detected_at
        self.found = False
        self.stored_after: dict[frozenset, float] = {}
        self.detected_by: dict[frozenset, str] = {}
        self.checked = threading.Event()

    def edit_handed_out(self) -> None:
        self.edit_sent, self.edit_sent_at = time.monotonic(), time.time()

    def stored(self) -> list[ContextConflict]:
        return list(ContextConflict.objects.filter(conflict_type="file_conflict"))

    def after_edit(self) -> None:
        try:
            assert self.edit_sent is not None and self.edit_sent_at is not None
            deadline = self.edit_sent + ONE_FLUSH
            self.found = wait_for(
                lambda: self.pairs <= {frozenset((c.task_a_id, c.task_b_id))
                                       for c in self.stored()},
                timeout=max(0.0, deadline - time.monotonic()), interval=0.05)
            for conflict in self.stored():
                pair = frozenset((conflict.task_a_id, conflict.task_b_id))
                self.detected_by[pair] = conflict.detected_by
                self.stored_after[pair] = conflict.detected_at.timestamp() - self.edit_sent_at
        finally:
            connection.close()  # this thread's own (the stand-in's request thread)
            self.checked.set()


@contextlib.contextmanager
def claude_code_holding_shared_py(claude, project: Path, tmp_path: Path,
                                  released: threading.Event):
    """Claude Code on ``project`` (task alpha) edits shared.py, then runs a Bash command
    that lasts until released (and should Claude Code's own Bash timeout end it first,
    its model's answer waits for ``released``): yields (model, process, session id,
    release) once the edit's claim is stored and the command runs."""
    go, marker = tmp_path / "go-alpha", f"MARKER-HOLD-{uuid.uuid4().hex[:12]}"
    steps = [claude_call("Edit", file_path=str(project / "shared.py"),
                         old_string="'hello'", new_string="'hello from alpha'"),
             claude_call("Bash", command=hold_command(go, marker, seconds=HOLD_SECONDS),
                         description="long build"),
             ClaudeStep(text="alpha done.", before=lambda: released.wait(HOLD_SECONDS))]
    with ClaudeStandIn(steps) as model:
        started = time.monotonic()
        process = claude.start(project, "edit shared.py, then build", model.url,
                               env=EVERY_TOOL_FLUSH)
        try:
            assert wait_for(lambda: processes_running(marker) or process.poll() is not None,
                            timeout=60, interval=0.1)
            assert process.poll() is None, finish(process, started)
            session_id = only_session(project)
            assert FileClaim.objects.filter(session_id=session_id, path="shared.py",
                                            released_at__isnull=True).exists()
            yield model, process, session_id, go.touch
        finally:
            released.set()
            go.touch()
            if process.poll() is None:
                with contextlib.suppress(AssertionError):
                    finish(process, started, timeout=60)
            kill_holds(marker)


def warnings_from_the_check(session_id: str) -> list[dict]:
    """The session's edit_warning events made by a check before an edit (source tool),
    not by a flush of past edits (source activity)."""
    return [e.parts for e in SessionEvent.objects.filter(session_id=session_id,
                                                         content="edit_warning")
            if (e.parts or {}).get("source") == "tool"]


@pytest.mark.parametrize("policy", ["warn", "block"])
def test_claude_code_then_codex_then_gemini_on_one_file(
        policy, claude, codex, gemini, tmp_path, orchestrator, api_token_live):
    from tests.claude_code.orchestrated import claude_setup

    alpha, beta, gamma = team_repository(tmp_path)
    for project, task in ((alpha, "alpha"), (beta, "beta"), (gamma, "gamma")):
        create_task(orchestrator, api_token_live, project, task, f"{task} changes")
    claude_setup(alpha, orchestrator, api_token_live, "alpha")
    agent_setup(codex, beta, orchestrator, api_token_live, "beta")
    agent_setup(gemini, gamma, orchestrator, api_token_live, "gamma")
    set_policy(orchestrator, api_token_live, register_project(orchestrator, api_token_live, alpha),
               policy)

    # Set once Gemini's run is over: the first two agents' last answers wait for it, so
    # they are live whatever the shell tools' own time limits.
    released = threading.Event()
    codex_watch = ConflictWatch(("alpha", "beta"))
    gemini_watch = ConflictWatch(("alpha", "gamma"), ("beta", "gamma"))
    go, marker = tmp_path / "go-beta", f"MARKER-HOLD-{uuid.uuid4().hex[:12]}"
    codex_edit = codex_patch("shared.py", "    return 'hello'", "    return 'hello from beta'")
    codex_edit.before = codex_watch.edit_handed_out
    codex_steps = [codex_edit,
                   call("exec_command", {"cmd": hold(go, marker), "yield_time_ms": 120000},
                        before=codex_watch.after_edit),
                   AgentStep(text="beta done.", before=lambda: released.wait(HOLD_SECONDS))]
    gemini_edit = gemini_replace(str(gamma / "shared.py"), "    return 'hello'",
                                 "    return 'hello from gamma'")
    gemini_edit.before = gemini_watch.edit_handed_out
    gemini_steps = [gemini_edit, AgentStep(text="gamma done.", before=gemini_watch.after_edit)]
    with claude_code_holding_shared_py(claude, alpha, tmp_path, released) as (
            claude_model, claude_process, alpha_session, release_claude), \
            CodexStandIn(codex_steps) as codex_model, GeminiStandIn(gemini_steps) as gemini_model:
        started = time.monotonic()
        codex_process = codex.start(beta, "edit shared.py, then build", codex_model.url,
                                    env=NO_TIME_FLUSH)
        try:
            # Codex edited (or was refused) and now holds its session open in a build.
            assert wait_for(lambda: processes_running(marker) or codex_process.poll() is not None,
                            timeout=90, interval=0.1)
            assert codex_process.poll() is None, finish_agent(codex_process, started)
            (beta_entry,) = mapped_sessions(beta).values()
            beta_session = beta_entry["sessionId"]
            gemini_run = gemini.run(gamma, "edit shared.py", gemini_model.url, env=NO_TIME_FLUSH)
            assert codex_process.poll() is None  # Codex was live all along Gemini's run
        finally:
            released.set()
            go.touch()
            with contextlib.suppress(AssertionError):
                finish_agent(codex_process, started, timeout=60)
            kill_holds(marker)
        assert claude_process.poll() is None  # Claude Code was live all along
        release_claude()
        finish(claude_process, time.monotonic(), timeout=60)
    gemini_run.check()
    (gamma_entry,) = mapped_sessions(gamma).values()
    gamma_session = gamma_entry["sessionId"]
    assert codex_watch.checked.is_set() and gemini_watch.checked.is_set()

    before_codex_edit = codex_model.scripted_requests[0].text()
    after_codex_edit = codex_model.scripted_requests[1].text()
    before_gemini_edit = gemini_model.scripted_requests[0].text()
    after_gemini_edit = gemini_model.scripted_requests[1].text()
    claude_alpha = f"claude-code session `{alpha_session}` on task `alpha`"
    codex_beta = f"codex session `{beta_session}` on task `beta`"
    if policy == "warn":
        # Codex, second: warned by the check before its edit (PreToolUse context, a
        # developer message its model reads with the patch's result): the file, alpha's
        # task and Claude Code as its agent kind.
        assert WARNING not in before_codex_edit
        assert WARNING in after_codex_edit and "`shared.py`" in after_codex_edit
        assert claude_alpha in after_codex_edit, after_codex_edit[-3000:]
        # Gemini, third: warned by its check before the edit (BeforeTool), said with the
        # edit's result (AfterTool <hook_context>), naming both agents before it.
        assert WARNING not in before_gemini_edit
        assert WARNING in after_gemini_edit and "`shared.py`" in after_gemini_edit
        assert claude_alpha in after_gemini_edit, after_gemini_edit[-3000:]
        assert codex_beta in after_gemini_edit, after_gemini_edit[-3000:]
        # The warnings are the checks' (before the edit), not a flush's.
        assert {"shared.py"} == {p for w in warnings_from_the_check(beta_session)
                                 for p in w["paths"]}
        assert {"shared.py"} == {p for w in warnings_from_the_check(gamma_session)
                                 for p in w["paths"]}
        # The edits went through (warn).
        assert (beta / "shared.py").read_text() == SHARED.replace("'hello'", "'hello from beta'")
        assert (gamma / "shared.py").read_text() == SHARED.replace("'hello'",
                                                                   "'hello from gamma'")
        # Each file_conflict was stored within one flush interval of the edit, by the
        # claim of the check (no activity of beta or gamma was flushed by then).
        alpha_beta = frozenset(("alpha", "beta"))
        assert codex_watch.found, codex_watch.detected_by
        assert codex_watch.detected_by[alpha_beta] == f"claims:{beta_session}"
        assert 0 < codex_watch.stored_after[alpha_beta] <= ONE_FLUSH, codex_watch.stored_after
        assert gemini_watch.found, gemini_watch.detected_by
        for pair in (frozenset(("alpha", "gamma")), frozenset(("beta", "gamma"))):
            assert gemini_watch.detected_by[pair] == f"claims:{gamma_session}"
            assert 0 < gemini_watch.stored_after[pair] <= ONE_FLUSH, gemini_watch.stored_after
        # Claude Code, first, heard of Codex's edit in its next request (a notice).
        after_hold = claude_model.scripted_requests[2].text()
        assert "another agent began editing `shared.py`" in after_hold, after_hold[-3000:]
        print(f"\nfile_conflict stored {codex_watch.stored_after[alpha_beta]:.2f} s after "
              f"Codex's edit was handed out; "
              + ", ".join(f"{'/'.join(sorted(p))} {t:.2f} s"
                          for p, t in gemini_watch.stored_after.items() if "gamma" in p)
              + f" after Gemini's (one flush: {ONE_FLUSH:.0f} s)")
    else:
        # Both refuse the edit: the file is unchanged and the model reads the reason.
        assert REFUSED in after_codex_edit and claude_alpha in after_codex_edit
        assert "Command blocked by PreToolUse hook" in after_codex_edit
        assert REFUSED in after_gemini_edit and "Tool execution blocked" in after_gemini_edit
        assert claude_alpha in after_gemini_edit, after_gemini_edit[-3000:]
        assert (beta / "shared.py").read_text() == SHARED
        assert (gamma / "shared.py").read_text() == SHARED
        # Nothing claimed for the refused edits, so nothing to conflict with.
        for session in (beta_session, gamma_session):
            assert not FileClaim.objects.filter(session_id=session, path="shared.py").exists()
        assert not ContextConflict.objects.filter(conflict_type="file_conflict").exists()
    assert (alpha / "shared.py").read_text() == SHARED.replace("'hello'", "'hello from alpha'")
