"""A pause that holds (seed 004, issue 40 item 3): a paused session saves its own work but
takes no new task (switch_task), takes no task lock (acquire_task_lock) and claims no new
files (claim_files), all E1633 with the reason; the pause is written to the state file; the periodic job resumes it once its
resetsAt + PAUSE_RESUME_GRACE_MINUTES has passed, logs it, and the session's next hook
answer says so; until that job runs check_recovery lists it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from contexts.models import GlobalContext
from foundation.backends import files
from foundation.core.models import JobRun
from foundation.core.stamps import iso
from sessions.models import ActiveSession, SessionDetail
from sessions.tasks import resume_paused_sessions_task
from tests.sessions.helpers import conforms


def state_file() -> dict:
    return files.read_json(files.recovery_dir() / ".session-state.json")


@pytest.mark.django_db
def test_a_paused_session_saves_but_takes_no_new_task_or_file(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("create_task", {"taskId": "t2", "name": "Lexer"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "projectDir": "/repo"})
    tools.ok("claim_files", {"sessionId": "s1", "paths": ["src/held.py"]})  # cached claimant
    resets = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    tools.ok("pause_session", {"sessionId": "s1", "reason": "usage_limit",
                               "resetsAt": iso(resets)})

    saved = tools.ok("save_context_snapshot", {"taskId": "t1", "sessionId": "s1",
                                               "updates": {"currentPhase": "paused mid-way"}})
    assert saved["savedTo"]["database"] is True

    switch = tools.call("switch_task", {"fromTaskId": "t1", "toTaskId": "t2",
                                        "sessionId": "s1"})
    assert (switch.status, switch.error_code) == (409, "E1633"), switch.body
    assert "usage_limit" in switch.body["error"]["message"]
    assert switch.body["error"]["details"]["resumeAt"] == iso(resets + timedelta(minutes=5))
    # Nothing of the switch stayed: the active task, the session's task.
    assert GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID).active_task_id != "t2"
    assert ActiveSession.objects.get(session_id="s1").task_id == "t1"

    for paths in (["src/new.py"], ["src/held.py"]):  # the one-round-trip path and the long
        claim = tools.call("claim_files", {"sessionId": "s1", "paths": paths})
        assert (claim.status, claim.error_code) == (409, "E1633"), claim.body
        assert claim.body["error"]["details"]["reason"] == "usage_limit"
    held = tools.ok("get_file_claims", {"sessionId": "s1"})["claims"]
    assert [c["path"] for c in held] == ["src/held.py"]

    state = state_file()
    assert (state["sessionId"], state["event"], state["taskId"]) == ("s1", "pause", "t1")
    assert state["paused"]["reason"] == "usage_limit"
    assert state["paused"]["resumeAt"] == iso(resets + timedelta(minutes=5))

    tools.ok("resume_session", {"sessionId": "s1"})
    assert (state_file()["event"], state_file()["paused"]) == ("resume", None)
    assert tools.ok("claim_files", {"sessionId": "s1", "paths": ["src/new.py"]})["claimed"]
    tools.ok("switch_task", {"fromTaskId": "t1", "toTaskId": "t2", "sessionId": "s1"})


@pytest.mark.django_db
def test_a_paused_session_takes_no_task_lock_but_keeps_and_frees_its_own(tools):
    """acquire_task_lock is new work (E1633, no lock written); renewing and releasing a
    lock the session already holds finish its own work and still go through."""
    from locks.services import current_lock

    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("create_task", {"taskId": "t2", "name": "Lexer"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "s1"})
    tools.ok("pause_session", {"sessionId": "s1", "reason": "user_stop"})

    refused = tools.call("acquire_task_lock", {"taskId": "t2", "sessionId": "s1"})
    assert (refused.status, refused.error_code) == (409, "E1633"), refused.body
    assert refused.body["error"]["details"]["reason"] == "user_stop"
    assert "taking a task lock" in refused.body["error"]["message"]
    assert current_lock("t2") is None
    # Its own lock: renewed and released while paused.
    tools.ok("renew_task_lock", {"taskId": "t1", "sessionId": "s1"})
    assert tools.ok("release_task_lock", {"taskId": "t1", "sessionId": "s1"})["released"]
    # Another, unpaused session locks t2 as before; after the resume s1 may lock again.
    tools.ok("start_session", {"sessionId": "s2", "taskId": "t2"})
    tools.ok("acquire_task_lock", {"taskId": "t2", "sessionId": "s2"})
    tools.ok("resume_session", {"sessionId": "s1"})
    assert tools.ok("acquire_task_lock", {"taskId": "t1", "sessionId": "s1"})["acquired"]


@pytest.mark.django_db
def test_start_writes_the_state_file(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1"})
    state = state_file()
    assert (state["sessionId"], state["event"], state["taskId"], state["paused"]) == \
        ("s1", "start", "t1", None)
    tools.ok("report_compaction", {"sessionId": "s1"})
    assert (state_file()["event"], state_file()["compactionCount"]) == ("compaction", 1)


@pytest.mark.django_db
def test_the_job_resumes_a_pause_past_its_reset_and_the_next_hook_answer_says_so(tools):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    for session_id in ("due", "early", "no-reset"):
        tools.ok("start_session", {"sessionId": session_id, "taskId": "t1",
                                   "projectDir": "/p"})
    past = (timezone.now() - timedelta(minutes=6)).replace(microsecond=0)
    tools.ok("pause_session", {"sessionId": "due", "reason": "usage_limit",
                               "resetsAt": iso(past)})
    tools.ok("pause_session", {"sessionId": "early", "reason": "usage_limit",
                               "resetsAt": iso(timezone.now() - timedelta(minutes=4))})
    tools.ok("pause_session", {"sessionId": "no-reset", "reason": "user_stop"})

    # Before the job runs, check_recovery lists the overdue pause.
    listed = tools.ok("check_recovery", {"projectDir": "/p"})["sessions"]
    assert [s["sessionId"] for s in listed] == ["due"]

    result = resume_paused_sessions_task()
    assert result["resumed"] == ["due"]
    run = JobRun.objects.filter(job_name="pause auto-resume").latest("id")
    assert (run.outcome, run.summary) == ("ok", "1 paused session(s) resumed")
    assert SessionDetail.objects.get(session_id="due").paused_at is None
    assert SessionDetail.objects.get(session_id="early").paused_at is not None
    assert SessionDetail.objects.get(session_id="no-reset").paused_at is not None
    assert tools.ok("check_recovery", {"projectDir": "/p"})["sessions"] == []
    resume_event = [e["parts"] for e in tools.ok("get_recent_session_events",
                                                 {"sessionId": "due"})["events"]
                    if e["type"] == "system_event"][-1]
    assert (resume_event["event"], resume_event["trigger"]) == ("session_resume",
                                                                "auto_resume")

    # The heartbeat says it is no longer paused; the hook's next flush carries the notice
    # to the model, once.
    assert conforms("heartbeat", tools.ok("heartbeat", {"sessionId": "due"}))["paused"] is False
    flush = tools.ok("record_activity", {"sessionId": "due", "notices": True, "toolUses": []})
    (notice,) = flush["notices"]
    assert notice.startswith("SESSION RESUMED - Reset complete") and "usage_limit" in notice
    assert tools.ok("record_activity", {"sessionId": "due", "notices": True,
                                        "toolUses": []})["notices"] == []
    # A second run finds nothing more to do.
    assert resume_paused_sessions_task()["resumed"] == []


@pytest.mark.django_db
def test_the_command_runs_the_job(tools, capsys):
    tools.ok("start_session", {"sessionId": "s1"})
    tools.ok("pause_session", {"sessionId": "s1", "reason": "usage_limit",
                               "resetsAt": iso(timezone.now() - timedelta(hours=1))})
    call_command("resume_paused_sessions")
    assert capsys.readouterr().out.splitlines() == ["s1", "1 paused session(s) resumed"]
    assert SessionDetail.objects.get(session_id="s1").paused_at is None
