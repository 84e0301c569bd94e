"""Crash detection, check_recovery and resume prompts, sessions reported dead, stale-session
cleanup (spec 12.3.2, seed 004). Compaction: test_compaction.py."""

from __future__ import annotations

import threading
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import connection
from django.utils import timezone

from foundation.backends import files
from sessions.services import recovery
from tests.sessions.helpers import backdate, status_of


@pytest.mark.django_db
def test_spec_12_3_2_detect_and_recover_a_crashed_session(tools):
    tools.ok("start_session", {"sessionId": "crashed-session"})
    backdate("crashed-session", 10)
    result = tools.ok("check_recovery", {})
    assert result["needsRecovery"] is True
    assert {"sessionId": "crashed-session", "recoveryType": "crash"}.items() <= \
        result["sessions"][0].items()
    marked = tools.ok("check_recovery", {"markRecovered": "crashed-session"})
    assert marked["markedRecovered"] == {"sessionId": "crashed-session", "status": "recovered"}
    assert tools.ok("check_recovery", {})["needsRecovery"] is False
    assert status_of("crashed-session") == ("recovered", False, "crash")
    again = tools.call("check_recovery", {"markRecovered": "crashed-session"})
    assert (again.status, again.error_code) == (409, "E1632")
    unknown = tools.call("check_recovery", {"markRecovered": "ghost"})
    assert (unknown.status, unknown.error_code) == (404, "E1631")


@pytest.mark.django_db
def test_a_start_sweeps_its_own_project_only(tools):
    """start_session's recovery check flips the stale sessions of the project it reports
    on; the other projects' wait for beat's sweep of the whole server."""
    for key in ("web", "api"):
        tools.ok("create_project", {"projectId": key, "name": key})
        tools.ok("start_session", {"sessionId": f"stale-{key}", "projectId": key})
        backdate(f"stale-{key}", 10)
    started = tools.ok("start_session", {"sessionId": "new-web", "projectId": "web"})
    assert [s["sessionId"] for s in started["recovery"]["sessions"]] == ["stale-web"]
    assert status_of("stale-web")[0] == "crashed"
    assert status_of("stale-api")[0] == "active"
    assert recovery.detect_crashed_sessions() == ["stale-api"]


@pytest.mark.django_db
def test_sweep_flips_only_stale_sessions_and_snapshots_the_task(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser", "currentPhase": "implementation",
                             "iteration": 3})
    tools.ok("start_session", {"sessionId": "old", "taskId": "t1"})
    tools.ok("start_session", {"sessionId": "fresh", "taskId": "t1"})
    backdate("old", 6)
    assert recovery.detect_crashed_sessions() == ["old"]
    assert recovery.detect_crashed_sessions() == []
    assert status_of("old") == ("crashed", True, "crash")
    assert status_of("fresh") == ("active", False, None)
    from sessions.models import ActiveSession
    snapshot = ActiveSession.objects.get(session_id="old").context_snapshot
    assert snapshot["task"]["task_id"] == "t1" and snapshot["task"]["iteration"] == 3
    assert snapshot["recoveryType"] == "crash" and snapshot["unsavedChanges"] == []


@pytest.mark.django_db
def test_resume_prompt_sections_are_filled_from_real_state(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser rewrite",
                             "currentPhase": "implementation", "iteration": 2,
                             "immediateContext": {"workingOn": "tokenizer",
                                                  "lastAction": "split lexer",
                                                  "nextStep": "write tests",
                                                  "blockers": ["CI is red"]}})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "gitBranch": "feat/x"})
    for n in range(6):
        tools.ok("update_session_scratchpad",
                 {"sessionId": "s1", "patch": {"n": n}})
    tools.call("heartbeat", {"sessionId": "s1", "conversationSummary": "Rewrote the lexer",
                             "unsavedChanges": [{"type": "edit", "path": "src/lexer.py",
                                                 "description": "token table"}]})
    backdate("s1", 10)
    report = tools.ok("check_recovery", {"includeHistory": True})
    entry = report["sessions"][0]
    assert entry["taskName"] == "Parser rewrite"
    assert len(entry["toolHistory"]) == 7  # start + 6 updates; heartbeats are not tool uses
    prompt = entry["resumePrompt"]
    lines = prompt.splitlines()
    assert lines[0] == "## Recovery Required: crash"
    assert "### Task: Parser rewrite" in lines
    for expected in ("- **Phase**: implementation", "- **Iteration**: 2",
                     "- **Working On**: tokenizer", "- **Last Action**: split lexer",
                     "- **Next Step**: write tests", "- **Blockers**: CI is red",
                     "### Recent Tool Usage", "### Pending Changes",
                     "- **edit** `src/lexer.py`: token table", "### Conversation Summary",
                     "Rewrote the lexer", "### Recommended Actions"):
        assert expected in lines, expected
    usage = lines[lines.index("### Recent Tool Usage") + 1:lines.index("### Pending Changes")]
    assert [u for u in usage if u] and len([u for u in usage if u]) == 5
    assert all("`update_session_scratchpad` (ok)" in u for u in usage if u)
    actions = lines[lines.index("### Recommended Actions") + 1:]
    text = "\n".join(actions)
    assert actions[0].startswith("1. Check the working tree on branch feat/x")
    assert "Resolve the blockers first: CI is red" in text
    assert "src/lexer.py" in text and "markRecovered" in text
    assert "Continue task" not in text  # blocked: the next step waits


@pytest.mark.django_db
def test_prompt_without_task_recommends_picking_one(tools):
    tools.ok("start_session", {"sessionId": "lonely"})
    backdate("lonely", 10)
    prompt = tools.ok("check_recovery", {})["sessions"][0]["resumePrompt"]
    assert "### Task: (no task)" in prompt and "pick one" in prompt
    assert "- (no tool usage recorded)" not in prompt  # start_session itself is recorded


@pytest.mark.django_db
def test_a_codex_sessions_resume_prompt_does_not_credit_claude_codes_hooks(tools):
    tools.ok("start_session", {"sessionId": "cx", "agentKind": "codex", "agentId": "codex"})
    backdate("cx", 10)
    prompt = tools.ok("check_recovery", {})["sessions"][0]["resumePrompt"]
    assert "Claude Code" not in prompt
    assert "marked recovered: by the agent's orchestrator hooks" in prompt


@pytest.mark.django_db
def test_stale_heartbeat_file_is_a_recovery_source(tools):
    stamp = (timezone.now() - timedelta(minutes=30)).isoformat()
    files.write_json_atomic(files.recovery_dir() / ".session-heartbeat.json",
                            {"sessionId": "lost-session", "timestamp": stamp,
                             "status": "active"})
    report = tools.ok("check_recovery", {})
    assert [s["sessionId"] for s in report["sessions"]] == ["lost-session"]
    tools.ok("check_recovery", {"markRecovered": "lost-session"})
    assert tools.ok("check_recovery", {})["needsRecovery"] is False


@pytest.mark.django_db
def test_ended_session_file_is_not_reported(tools):
    tools.ok("start_session", {"sessionId": "s1"})
    tools.ok("end_session", {"sessionId": "s1"})
    marker = files.read_json(files.recovery_dir() / ".session-heartbeat.json")
    marker["timestamp"] = (timezone.now() - timedelta(hours=1)).isoformat()
    files.write_json_atomic(files.recovery_dir() / ".session-heartbeat.json", marker)
    assert tools.ok("check_recovery", {})["needsRecovery"] is False


@pytest.mark.django_db
def test_start_session_reports_a_crashed_predecessor_of_its_project(tools):
    for key in ("a", "b"):
        tools.ok("create_project", {"projectId": key, "name": key})
    tools.ok("start_session", {"sessionId": "old", "projectId": "a", "projectDir": "/a"})
    tools.ok("start_session", {"sessionId": "other", "projectId": "b", "projectDir": "/b"})
    backdate("old", 10)
    backdate("other", 10)
    body = tools.ok("start_session", {"sessionId": "new", "projectId": "a",
                                      "projectDir": "/a-worktree"})
    assert [s["sessionId"] for s in body["recovery"]["sessions"]] == ["old"]


@pytest.mark.django_db(transaction=True)
def test_two_concurrent_sweeps_flip_each_session_once():
    from sessions.models import ActiveSession

    ActiveSession.objects.bulk_create(
        [ActiveSession(session_id=f"s{i}", status="active") for i in range(200)])
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mcp_contexts.active_sessions SET last_heartbeat = now() - "
                       "interval '1 hour'")
    results: list[list[str]] = []
    barrier = threading.Barrier(2)

    def sweep():
        barrier.wait()
        try:
            results.append(recovery.detect_crashed_sessions())
        finally:
            connection.close()

    threads = [threading.Thread(target=sweep) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    flipped = results[0] + results[1]
    assert sorted(flipped) == sorted(f"s{i}" for i in range(200))


@pytest.mark.django_db
def test_clean_stale_sessions_closes_out_abandoned_ones_and_deletes_nothing(tools):
    for sid in ("ended", "recovered", "crashed", "live", "silent", "fresh"):
        tools.ok("start_session", {"sessionId": sid})
    tools.ok("append_session_event", {"sessionId": "ended", "type": "user_message",
                                      "role": "user", "content": "hi"})
    tools.ok("append_session_event", {"sessionId": "silent", "type": "user_message",
                                      "role": "user", "content": "still there?"})
    tools.ok("end_session", {"sessionId": "ended"})
    for sid in ("recovered", "crashed"):
        backdate(sid, 10)
    recovery.detect_crashed_sessions()
    recovery.mark_recovered("recovered")
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mcp_contexts.active_sessions SET ended_at = now() - "
                       "interval '2 days', last_heartbeat = now() - interval '2 days' "
                       "WHERE session_id <> 'fresh'")
    # "live" and "silent" are live but silent for two days (the crash sweep never ran).
    assert sorted(recovery.clean_stale_sessions()) == ["live", "silent"]
    from sessions.models import ActiveSession, SessionEvent
    assert sorted(ActiveSession.objects.values_list("session_id", flat=True)) == \
        ["crashed", "ended", "fresh", "live", "recovered", "silent"]
    assert SessionEvent.objects.filter(session_id="ended").exists()
    assert status_of("silent") == ("ended", True, "timeout")
    assert status_of("fresh") == ("active", False, None)
    assert status_of("crashed")[0] == "crashed"
    report = tools.ok("check_recovery", {})
    listed = {s["sessionId"]: s for s in report["sessions"]}
    assert listed["silent"]["recoveryType"] == "timeout"
    assert "## Recovery Required: timeout" in listed["silent"]["resumePrompt"]
    assert [e["content"] for e in listed["silent"]["stateReconciled"]] == ["still there?"]
    assert recovery.clean_stale_sessions() == []  # nothing left to close
    tools.ok("check_recovery", {"markRecovered": "silent"})
    assert status_of("silent") == ("recovered", False, "timeout")


@pytest.mark.django_db
def test_events_of_a_session_ended_three_days_ago_survive_the_cleanup(tools):
    tools.ok("start_session", {"sessionId": "old"})
    for text in ("plan the parser", "write the tests"):
        tools.ok("append_session_event", {"sessionId": "old", "type": "user_message",
                                          "role": "user", "content": text})
    tools.ok("record_activity", {"sessionId": "old", "toolUses": [
        {"tool": "Edit", "success": True, "timestamp": "2030-01-01T00:00:00Z"}]})
    tools.ok("end_session", {"sessionId": "old", "summary": "parser done"})
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mcp_contexts.active_sessions SET ended_at = now() - "
                       "interval '3 days', last_heartbeat = now() - interval '3 days', "
                       "started_at = now() - interval '4 days' WHERE session_id = 'old'")
    out = StringIO()
    call_command("clean_stale_sessions", stdout=out)
    assert "0 abandoned session(s) closed" in out.getvalue()
    assert recovery.clean_stale_sessions() == []
    events = tools.ok("get_recent_session_events", {"sessionId": "old"})["events"]
    assert [e["content"] for e in events] == ["plan the parser", "write the tests"]
    from sessions.models import SessionHandoff, ToolInvocation
    assert ToolInvocation.objects.filter(session_id="old").exists()
    assert SessionHandoff.objects.filter(from_session_id="old").exists()
    assert status_of("old") == ("ended", False, None)


@pytest.mark.django_db
def test_sessions_reported_dead_are_crashed_at_once_and_only_live_ones(tools):
    tools.ok("start_session", {"sessionId": "killed", "projectDir": "/p"})
    tools.ok("start_session", {"sessionId": "finished", "projectDir": "/p"})
    tools.ok("end_session", {"sessionId": "finished"})
    started = tools.ok("start_session", {"sessionId": "next", "projectDir": "/p",
                                         "crashedSessionIds": ["killed", "finished", "ghost"]})
    assert [s["sessionId"] for s in started["recovery"]["sessions"]] == ["killed"]
    assert status_of("killed") == ("crashed", True, "crash")
    assert status_of("finished")[0] == "ended"
    # The same through check_recovery, and a repeat changes nothing.
    tools.ok("start_session", {"sessionId": "killed-too", "projectDir": "/p"})
    report = tools.ok("check_recovery", {"projectDir": "/p",
                                         "crashedSessionIds": ["killed-too", "killed"]})
    assert {s["sessionId"] for s in report["sessions"]} == {"killed", "killed-too"}
    bad = tools.call("check_recovery", {"crashedSessionIds": ["a b"]})
    assert (bad.status, bad.error_code) == (400, "E1612")
