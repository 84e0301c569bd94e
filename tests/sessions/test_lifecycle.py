"""start_session / heartbeat / end_session over REST, against real Postgres, Redis, files;
start_session's resolveTask (the task from the branch, then the active task) and its
contextBundle."""

from __future__ import annotations

import re

import pytest
from django.conf import settings

from contexts.models import ContextVersion, GlobalContext, TaskContext
from foundation.backends import files, redis_store
from sessions import signals
from sessions.models import ActiveSession, SessionDetail
from tests.sessions.helpers import backdate, conforms

pytestmark = pytest.mark.django_db


def test_start_generates_a_spec_id_and_records_ownership(tools, django_capture_on_commit_callbacks):
    tools.ok("create_task", {"taskId": "t1", "name": "Task one"})
    seen = []
    signals.session_started.connect(lambda **kw: seen.append(kw), weak=False,
                                    dispatch_uid="test-started")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            body = tools.ok("start_session", {"taskId": "t1", "projectDir": "/repo",
                                              "gitBranch": "main", "agentId": "claude",
                                              "processId": 4242})
    finally:
        signals.session_started.disconnect(dispatch_uid="test-started")
    assert re.fullmatch(r"session-\d{13}-[0-9a-f-]{36}", body["sessionId"])
    assert body["status"] == "active" and body["notificationStatus"] == "skipped"
    assert body["recovery"]["needsRecovery"] is False
    row = ActiveSession.objects.get(session_id=body["sessionId"])
    assert (row.task_id, row.project_dir, row.git_branch) == ("t1", "/repo", "main")
    detail = SessionDetail.objects.get(session_id=body["sessionId"])
    assert (detail.agent_id, detail.process_id) == ("claude", 4242)
    assert seen and seen[0]["session_id"] == body["sessionId"] and seen[0]["agent_id"] == "claude"


def test_start_refuses_an_existing_id_and_an_unknown_task(tools):
    tools.ok("start_session", {"sessionId": "s-dup"})
    again = tools.call("start_session", {"sessionId": "s-dup"})
    assert (again.status, again.error_code) == (409, "E1601")
    missing = tools.call("start_session", {"sessionId": "s-x", "taskId": "nope"})
    assert (missing.status, missing.error_code) == (404, "E1610")
    assert not ActiveSession.objects.filter(session_id="s-x").exists()


def test_a_refused_start_writes_nothing(tools):
    """start_session writes its rows in one statement: an existing id (E1601) changes
    none of the first session's rows nor the project's note; an unknown or malformed
    project of a start that resolves its task (E1605, E1612) leaves no session."""
    from foundation.core.models import SessionOwner
    from sessions.models import SessionHandoff, SessionWork

    tools.ok("create_task", {"taskId": "t1", "name": "Task one"})
    tools.ok("start_session", {"sessionId": "s-note"})
    tools.ok("end_session", {"sessionId": "s-note", "summary": "Parser done"})
    first = tools.ok("start_session", {"sessionId": "s-dup", "taskId": "t1",
                                       "agentId": "first", "processId": 1})
    assert first["handoff"]["consumedBySessionId"] == "s-dup"
    note = SessionHandoff.objects.get(active=True)
    SessionOwner.objects.filter(session_id="s-dup").update(token_name="the-first-token")
    again = tools.call("start_session", {"sessionId": "s-dup", "agentId": "second",
                                         "processId": 2, "projectDir": "/elsewhere"})
    assert (again.status, again.error_code) == (409, "E1601")
    detail = SessionDetail.objects.get(session_id="s-dup")
    assert (detail.agent_id, detail.process_id) == ("first", 1)
    assert ActiveSession.objects.get(session_id="s-dup").project_dir is None
    assert SessionOwner.objects.get(session_id="s-dup").token_name == "the-first-token"
    assert list(SessionWork.objects.filter(session_id="s-dup").values_list(
        "task_id", "agent_id")) == [("t1", "first")]
    assert SessionHandoff.objects.get(active=True).last_confirmed_at == note.last_confirmed_at
    for project, code in (("nowhere", (404, "E1605")), ("../up", (400, "E1612"))):
        refused = tools.call("start_session", {"sessionId": "s-new", "projectId": project,
                                               "resolveTask": True, "createTask": True,
                                               "projectDir": "/repo", "gitBranch": "b"})
        assert (refused.status, refused.error_code) == code
    assert not ActiveSession.objects.filter(session_id="s-new").exists()
    assert not SessionOwner.objects.filter(session_id="s-new").exists()


def test_heartbeat_updates_db_redis_and_file_without_versions(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Task one"})
    tools.ok("start_session", {"sessionId": "s-hb", "taskId": "t1"})
    backdate("s-hb", 1)
    body = tools.ok("heartbeat", {
        "sessionId": "s-hb", "conversationSummary": "Wrote the parser",
        "unsavedChanges": [{"type": "edit", "path": "src/p.py", "description": "parser"}]})
    assert body["savedTo"] == {"database": True, "redis": True, "file": True}
    row = ActiveSession.objects.get(session_id="s-hb")
    assert row.conversation_summary == "Wrote the parser"
    assert row.unsaved_changes[0]["path"] == "src/p.py"
    key = redis_store.key("heartbeat", "s-hb")
    assert redis_store.get_json(key) > 0
    assert 0 < redis_store.run(lambda r: r.ttl(key)) <= settings.REDIS_HEARTBEAT_TTL
    marker = files.read_json(files.recovery_dir() / ".session-heartbeat.json")
    assert marker["sessionId"] == "s-hb" and marker["status"] == "active"
    assert ContextVersion.objects.filter(task_id="t1").count() == 1  # only the creation


def test_the_redis_marker_is_refreshed_a_few_times_per_ttl_not_on_every_heartbeat(tools):
    from sessions.services import markers

    tools.ok("start_session", {"sessionId": "s-marker"})
    key = redis_store.key("heartbeat", "s-marker")
    assert redis_store.get_json(key) > 0
    # A value no write of ours gives (a write stores the time in ms): still there after
    # the heartbeats means none of them wrote the marker, fresh from the start.
    redis_store.set_json(key, 1, settings.REDIS_HEARTBEAT_TTL)
    for _ in range(3):
        assert tools.ok("heartbeat", {"sessionId": "s-marker"})["savedTo"]["redis"] is True
    assert redis_store.get_json(key) == 1
    assert 0 < redis_store.run(lambda r: r.ttl(key)) <= settings.REDIS_HEARTBEAT_TTL
    # A quarter of the TTL after this process's last write, the next beat writes it again.
    last, _ = markers._redis_marked["s-marker"]
    refresh = settings.REDIS_HEARTBEAT_TTL / markers.REDIS_MARKER_REFRESH_SHARE
    assert markers._mark_alive_in_redis("s-marker", last + refresh - 1, force=False)
    assert redis_store.get_json(key) == 1
    assert markers._mark_alive_in_redis("s-marker", last + refresh, force=False)
    assert redis_store.get_json(key) > 1
    # The end drops it, and forgets it: a new start writes it at once.
    tools.ok("end_session", {"sessionId": "s-marker"})
    assert redis_store.get_json(key) is None and "s-marker" not in markers._redis_marked


def test_heartbeat_refusals(tools):
    unknown = tools.call("heartbeat", {"sessionId": "ghost"})
    assert (unknown.status, unknown.error_code) == (404, "E1600")
    tools.ok("start_session", {"sessionId": "s-end"})
    tools.ok("end_session", {"sessionId": "s-end"})
    ended = tools.call("heartbeat", {"sessionId": "s-end"})
    assert (ended.status, ended.error_code) == (409, "E1602")
    tools.ok("start_session", {"sessionId": "s-crash"})
    backdate("s-crash", 10)
    tools.ok("check_recovery", {})
    crashed = tools.call("heartbeat", {"sessionId": "s-crash"})
    assert (crashed.status, crashed.error_code) == (409, "E1603")
    tools.ok("start_session", {"sessionId": "s-task"})
    bad_task = tools.call("heartbeat", {"sessionId": "s-task", "taskId": "nope"})
    assert bad_task.error_code == "E1610"


def test_heartbeat_survives_redis_down(tools, settings):
    from tests.conftest import free_port

    tools.ok("start_session", {"sessionId": "s-r"})
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    body = tools.ok("heartbeat", {"sessionId": "s-r"})
    assert body["savedTo"] == {"database": True, "redis": False, "file": True}


def test_end_session_statuses(tools, django_capture_on_commit_callbacks):
    missing = tools.call("end_session", {"sessionId": "ghost"})
    assert (missing.status, missing.error_code) == (404, "E1600")
    tools.ok("start_session", {"sessionId": "s-e"})
    seen = []
    signals.session_ended.connect(lambda **kw: seen.append(kw), weak=False,
                                  dispatch_uid="test-ended")
    try:
        with django_capture_on_commit_callbacks(execute=True):
            body = tools.ok("end_session", {"sessionId": "s-e"})
    finally:
        signals.session_ended.disconnect(dispatch_uid="test-ended")
    assert body["status"] == "ended" and body["endedAt"] and body["handoff"] is None
    assert seen == [{"signal": signals.session_ended, "sender": ActiveSession,
                     "session_id": "s-e", "status": "ended"}]
    assert redis_store.get_json(redis_store.key("heartbeat", "s-e")) is None
    again = tools.call("end_session", {"sessionId": "s-e"})
    assert (again.status, again.error_code) == (409, "E1602")


@pytest.mark.django_db
def test_start_session_resolves_the_task_from_the_branch_then_the_active_task(tools):
    for task in ("t1", "t2", "t3"):
        tools.ok("create_task", {"taskId": task, "name": task})
    base = {"projectDir": "/repo", "gitBranch": "feature/x", "resolveTask": True}
    nothing = tools.ok("start_session", {"sessionId": "s0", **base})
    assert (nothing["taskId"], nothing["taskSource"]) == (None, None)
    GlobalContext.objects.update(active_task_id="t3")
    active = tools.ok("start_session", {"sessionId": "s1", **base})
    assert (active["taskId"], active["taskSource"]) == ("t3", "active")
    backdate("s1", 1)  # one test transaction has one now(): order the starts
    tools.ok("start_session", {"sessionId": "s2", "taskId": "t1", "projectDir": "/repo",
                               "gitBranch": "feature/x"})
    branch = conforms("start_session", tools.ok("start_session", {"sessionId": "s3", **base}))
    assert (branch["taskId"], branch["taskSource"]) == ("t1", "branch")
    other_branch = tools.ok("start_session", {"sessionId": "s4", **base, "gitBranch": "main"})
    assert (other_branch["taskId"], other_branch["taskSource"]) == ("t3", "active")
    given = tools.ok("start_session", {"sessionId": "s5", **base, "taskId": "t2"})
    assert (given["taskId"], given["taskSource"]) == ("t2", "argument")
    plain = tools.ok("start_session", {"sessionId": "s6", "projectDir": "/repo",
                                       "gitBranch": "feature/x"})
    assert (plain["taskId"], plain["taskSource"]) == (None, None)
    assert "contextBundle" not in plain


@pytest.mark.django_db
def test_resolve_task_never_picks_a_finished_task(tools):
    for task in ("done", "shelved", "open"):
        tools.ok("create_task", {"taskId": task, "name": task})
    base = {"projectDir": "/repo", "gitBranch": "feature/x", "resolveTask": True}
    tools.ok("start_session", {"sessionId": "s1", "taskId": "done", "projectDir": "/repo",
                               "gitBranch": "feature/x"})
    TaskContext.objects.filter(task_id="done").update(status="completed")
    GlobalContext.objects.update(active_task_id="shelved")
    TaskContext.objects.filter(task_id="shelved").update(status="archived")
    nothing = tools.ok("start_session", {"sessionId": "s2", **base})
    assert (nothing["taskId"], nothing["taskSource"]) == (None, None)
    GlobalContext.objects.update(active_task_id="open")
    active = tools.ok("start_session", {"sessionId": "s3", **base})
    assert (active["taskId"], active["taskSource"]) == ("open", "active")


@pytest.mark.django_db
def test_create_task_makes_a_branch_its_task_once_and_apart_in_each_project(tools):
    for project, name in (("web", "Shop Web"), ("api", "Shop Web")):
        tools.ok("create_project", {"projectId": project, "name": name})
    base = {"gitBranch": "feature/login", "resolveTask": True, "createTask": True}
    first = tools.ok("start_session", {"sessionId": "s1", "projectId": "web",
                                       "projectDir": "/a", **base})
    assert (first["taskId"], first["taskSource"]) == ("Shop-Web-feature-login", "created")
    task = TaskContext.objects.get(task_id="Shop-Web-feature-login")
    assert (task.project_id, task.name, task.status, task.version) == (
        "web", "feature/login", "in_progress", 1)
    version = ContextVersion.objects.get(task_id=task.task_id)
    assert (version.version, version.change_type, version.created_by) == (
        1, "manual", "session start")
    # Another directory of the same branch finds the task made for it.
    again = tools.ok("start_session", {"sessionId": "s2", "projectId": "web",
                                       "projectDir": "/b", **base})
    assert (again["taskId"], again["taskSource"]) == ("Shop-Web-feature-login", "branchTask")
    # Another project with the same name and branch gets an id of its own.
    other = tools.ok("start_session", {"sessionId": "s3", "projectId": "api",
                                       "projectDir": "/c", **base})
    assert other["taskSource"] == "created"
    assert other["taskId"].startswith("Shop-Web-feature-login-") and \
        TaskContext.objects.get(task_id=other["taskId"]).project_id == "api"
    # Without git, the directory names the task.
    folder = tools.ok("start_session", {"sessionId": "s4", "projectId": "web",
                                        "projectDir": "/home/dev/notes/", "resolveTask": True,
                                        "createTask": True})
    assert (folder["taskId"], folder["taskSource"]) == ("notes", "created")
    assert TaskContext.objects.get(task_id="notes").name == "notes"


@pytest.mark.django_db
def test_start_session_carries_the_bundle_and_the_crash_of_the_project(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser",
                             "immediateContext": {"nextStep": "handle escapes"}})
    tools.ok("start_session", {"sessionId": "old", "taskId": "t1", "projectDir": "/repo"})
    backdate("old", 10)
    body = conforms("start_session", tools.ok("start_session", {
        "sessionId": "new", "taskId": "t1", "projectDir": "/repo", "contextBudgetTokens": 500}))
    bundle = body["contextBundle"]
    assert bundle["taskId"] == "t1" and bundle["budgetTokens"] == 500
    assert "**Next Step**: handle escapes" in bundle["text"]
    crashed = body["recovery"]["sessions"]
    assert [s["sessionId"] for s in crashed] == ["old"]
    assert crashed[0]["resumePrompt"].startswith("## Recovery Required: crash")
    refused = tools.call("start_session", {"sessionId": "x", "contextBudgetTokens": 20001})
    assert (refused.status, refused.error_code) == (400, "E1612")
