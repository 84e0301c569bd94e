"""The hook client against a real server: what Claude Code's hooks leave in the database.

The executable runs as Claude Code runs it, on the protocol fixtures, against the live
server of the test session (real HTTP, real Postgres, Redis and graph).
"""

from __future__ import annotations

import time

import pytest
from django.db import connection

from contexts.models import TaskContext
from foundation.core.db import qualified
from sessions.models import ActiveSession, SessionEvent, SessionHandoff, ToolInvocation
from sessions.services import recovery
from tests.client.conftest import Project, dead_url, fixture
from tests.waiting import wait_for

FAST_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "0"}


@pytest.fixture
def live_project(live_api, tmp_path, tools_live):
    url, token = live_api
    tools_live("create_task", {"taskId": "login-form", "name": "Login form",
                               "currentPhase": "implementation",
                               "immediateContext": {"nextStep": "wire the submit button"}})
    return Project(tmp_path / "project", url, token, task_id="login-form")


def edit(project: Project, path: str, session: str) -> None:
    payload = fixture("post_tool_use_edit", session_id=session)
    payload["tool_input"]["file_path"] = str(project.root / path)
    run = project.hook("PostToolUse", payload, env=FAST_FLUSH)
    assert run.returncode == 0 and run.stdout == ""


def test_a_claude_session_from_start_to_handoff(live_project):
    claude = "11111111-1111-4111-8111-111111111111"
    run = live_project.hook("SessionStart", fixture("session_start_startup"))
    session_id = live_project.mapped(claude)["sessionId"]
    assert session_id in run.context and "login-form" in run.context
    assert "wire the submit button" in run.context  # the task's bundle was injected
    assert len(run.context) < 10_000
    session = ActiveSession.objects.get(session_id=session_id)
    assert (session.status, session.task_id) == ("active", "login-form")
    assert session.project_dir == str(live_project.root)

    edit(live_project, "src/auth.ts", claude)
    bash = fixture("post_tool_use_failure_bash", session_id=claude)
    live_project.hook("PostToolUseFailure", bash, env=FAST_FLUSH)
    history = list(ToolInvocation.objects.filter(session_id=session_id)
                   .values_list("tool", "success"))
    assert ("Edit", True) in history and ("Bash", False) in history
    assert "src/auth.ts" in TaskContext.objects.get(task_id="login-form").key_files

    live_project.hook("Stop", fixture("stop"))
    session.refresh_from_db()
    assert "refactored login()" in session.conversation_summary

    live_project.hook("SessionEnd", fixture("session_end_other"))
    session.refresh_from_db()
    assert session.status == "ended"
    handoff = SessionHandoff.objects.get(from_session_id=session_id)
    assert handoff.summary.startswith("Claude Code session ended (other)")
    assert "refused" not in live_project.log()

    # The next Claude session of the project starts with that handoff in its context.
    nxt = live_project.hook("SessionStart", fixture(
        "session_start_startup", session_id="22222222-2222-4222-8222-222222222222"))
    assert "Claude Code session ended (other)" in nxt.context


def test_tool_calls_in_a_burst_cost_one_round_trip(live_project):
    claude = "11111111-1111-4111-8111-111111111111"
    live_project.hook("SessionStart", fixture("session_start_startup"))
    session_id = live_project.mapped(claude)["sessionId"]
    for _ in range(5):
        live_project.hook("PostToolUse", fixture("post_tool_use_bash"))  # 5 s throttle
    assert not ToolInvocation.objects.filter(session_id=session_id, tool="Bash").exists()
    live_project.hook("Stop", fixture("stop"))  # the turn's end sends the batch
    assert ToolInvocation.objects.filter(session_id=session_id, tool="Bash").count() == 5


def test_compactions_are_counted_and_every_second_one_reloads_everything(live_project):
    live_project.hook("SessionStart", fixture("session_start_startup"))
    session_id = live_project.mapped("11111111-1111-4111-8111-111111111111")["sessionId"]
    live_project.hook("PreCompact", fixture("pre_compact_auto"))
    first = live_project.hook("SessionStart", fixture("session_start_compact"))
    live_project.hook("PostCompact", fixture("post_compact_auto"))
    assert "compaction 1" in first.context and "essential task context" in first.context
    live_project.hook("PreCompact", fixture("pre_compact_manual"))
    second = live_project.hook("SessionStart", fixture("session_start_compact"))
    assert "compaction 2" in second.context and "full reload" in second.context
    assert "wire the submit button" in second.context
    contents = list(SessionEvent.objects.filter(session_id=session_id)
                    .values_list("content", flat=True))
    assert contents.count("pre_compact") == 2 and "compaction_complete" in contents


def test_resume_carries_on_in_the_same_session(live_project):
    live_project.hook("SessionStart", fixture("session_start_startup"))
    first = live_project.mapped("11111111-1111-4111-8111-111111111111")["sessionId"]
    run = live_project.hook("SessionStart", fixture("session_start_resume"))
    assert live_project.mapped("11111111-1111-4111-8111-111111111111")["sessionId"] == first
    assert "resumed" in run.context and ActiveSession.objects.count() == 1


def test_a_crashed_session_is_reported_to_the_next_one(live_project):
    live_project.hook("SessionStart", fixture("session_start_startup"))
    crashed = live_project.mapped("11111111-1111-4111-8111-111111111111")["sessionId"]
    edit(live_project, "src/auth.ts", "11111111-1111-4111-8111-111111111111")
    # Claude Code was killed: no more heartbeats, and the sweep finds it stale.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('active_sessions')} SET last_heartbeat = "
                       "now() - interval '1 hour' WHERE session_id = %s", [crashed])
    assert crashed in recovery.detect_crashed_sessions()

    run = live_project.hook("SessionStart", fixture(
        "session_start_startup", session_id="22222222-2222-4222-8222-222222222222"))
    assert crashed in run.context and "Recovery" in run.context
    # The new session works on the same task: it took the crashed one's work over.
    assert wait_for(
        lambda: ActiveSession.objects.get(session_id=crashed).status == "recovered",
        timeout=5), ActiveSession.objects.get(session_id=crashed).status


def test_calls_made_while_the_service_was_down_arrive_in_order_after(live_project):
    url = (live_project.state / "config.json").read_text()
    live_project.configure(dead_url(), "whatever", "login-form")
    claude = "11111111-1111-4111-8111-111111111111"
    start = live_project.hook("SessionStart", fixture("session_start_startup"))
    assert "offline" in start.context
    edit(live_project, "src/offline.ts", claude)
    live_project.hook("Stop", fixture("stop"))
    assert [i["tool"] for i in live_project.spooled()] == [
        "start_session", "record_activity", "record_activity"]
    session_id = live_project.mapped(claude)["sessionId"]
    assert not ActiveSession.objects.filter(session_id=session_id).exists()

    (live_project.state / "config.json").write_text(url)  # the service is back
    (live_project.state / "down-until").unlink(missing_ok=True)
    live_project.hook("PostToolUse", fixture("post_tool_use_bash"))
    assert live_project.spooled() == []
    session = ActiveSession.objects.get(session_id=session_id)
    assert session.task_id == "login-form" and "refactored" in session.conversation_summary
    assert ToolInvocation.objects.filter(session_id=session_id, tool="Edit").exists()
    assert "src/offline.ts" in TaskContext.objects.get(task_id="login-form").key_files


def test_a_slow_service_costs_the_hook_its_budget_not_more(live_project, tmp_path):
    import socket
    import threading

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)  # accepts connections, never answers
    accepted = []
    threading.Thread(target=lambda: [accepted.append(listener.accept()) for _ in range(8)],
                     daemon=True).start()
    live_project.configure(f"http://127.0.0.1:{listener.getsockname()[1]}", "t", "login-form")
    try:
        started = time.monotonic()
        run = live_project.hook("PostToolUse", fixture("post_tool_use_bash"), env=FAST_FLUSH)
        assert run.returncode == 0 and time.monotonic() - started < 5
        assert [i["tool"] for i in live_project.spooled()] == ["start_session",
                                                                "record_activity"]
    finally:
        listener.close()


def test_a_session_whose_claude_process_died_is_reported_at_the_next_start(live_project):
    import json
    import subprocess

    live_project.hook("SessionStart", fixture("session_start_startup"))
    first = live_project.mapped("11111111-1111-4111-8111-111111111111")["sessionId"]
    # Claude Code was killed -9: its pid runs no more and no SessionEnd came.
    gone = subprocess.Popen(["true"])
    gone.wait()
    path = live_project.state / "sessions.json"
    sessions = json.loads(path.read_text())
    sessions["11111111-1111-4111-8111-111111111111"]["agentPid"] = gone.pid
    path.write_text(json.dumps(sessions))

    run = live_project.hook("SessionStart", fixture(
        "session_start_startup", session_id="22222222-2222-4222-8222-222222222222"))
    # Marked crashed at once (no 5-minute wait), reported, then taken over (same task).
    assert first in run.context and "Recovery Required: crash" in run.context
    session = ActiveSession.objects.get(session_id=first)
    assert session.recovery_type == "crash" and session.status in ("crashed", "recovered")
    assert live_project.mapped("11111111-1111-4111-8111-111111111111")["crashed"] is True
