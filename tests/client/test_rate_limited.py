"""The hook client against a real server that answers 429 (the token's rate limit,
orchestrator.web.ratelimit): the call goes to the spool like any call the service cannot
take now, the hook returns at once, no hook calls the service again before the answer's
Retry-After, and the first one after it replays the spool in order: nothing is lost.

Payloads are built here (the shapes of Claude Code's, see ``fixtures/README.md``)."""

from __future__ import annotations

import time

import httpx

from sessions.models import ActiveSession, ToolInvocation
from tests.client.conftest import Project
from tests.waiting import wait_for

CLAUDE = "44444444-4444-4444-8444-444444444444"
FAST_FLUSH = {"ORCHESTRATOR_FLUSH_SECONDS": "0"}


def payload(event: str, project: Project, **fields) -> dict:
    return {"session_id": CLAUDE, "cwd": str(project.root), "hook_event_name": event,
            "transcript_path": str(project.root / "transcript.jsonl"), **fields}


def edit_payload(project: Project, path: str, event: str = "PostToolUse") -> dict:
    return payload(event, project, tool_name="Edit", tool_use_id=f"toolu_{path}",
                   tool_input={"file_path": str(project.root / path),
                               "old_string": "a", "new_string": "b"})


def down_for(project: Project) -> float:
    """Seconds the client will leave the service alone (its down-until memo)."""
    try:
        return float((project.state / "down-until").read_text()) - time.time()
    except OSError:
        return 0.0


def spend_budget(url: str, token: str) -> None:
    """Use up the token's budget with calls of another client of the same token."""
    while httpx.post(f"{url}/api/v1/tools/list_projects/", json={}, timeout=30,
                     headers={"Authorization": f"Bearer {token}"}).status_code == 200:
        pass


def test_a_429_spools_the_call_and_the_client_waits_for_retry_after(live_api, tmp_path,
                                                                     settings):
    url, token = live_api
    httpx.post(f"{url}/api/v1/tools/create_task/", timeout=30,
               headers={"Authorization": f"Bearer {token}"},
               json={"taskId": "limited-task", "name": "Limited"}).raise_for_status()
    project = Project(tmp_path / "project", url, token, task_id="limited-task")
    start = project.hook("SessionStart", payload("SessionStart", project, source="startup"))
    session_id = project.mapped(CLAUDE)["sessionId"]
    assert session_id in start.context

    settings.API_RATE_LIMIT = "4 per 20 seconds"
    spend_budget(url, token)
    flushed = project.hook("PostToolUse", edit_payload(project, "src/a.py"), env=FAST_FLUSH)
    # Never in the agent's way: the hook returns at once, with nothing to say.
    assert flushed.returncode == 0 and flushed.stdout == "" and flushed.seconds < 3
    (spooled,) = project.spooled()
    assert spooled["tool"] == "record_activity"
    assert spooled["arguments"]["toolUses"][0]["filePaths"] == ["src/a.py"]
    assert "HTTP 429" in project.log() and "retry after" in project.log()
    # Left alone for the Retry-After the server gave (up to 20 s here), not the 2 s
    # pause after an outage.
    assert down_for(project) > 5

    # Meanwhile every hook spools without calling: the edit check lets the edit through
    # unchecked, the turn's end queues behind the first call.
    check = project.hook("PreEdit", edit_payload(project, "src/b.py", "PreToolUse"))
    assert check.returncode == 0 and check.stdout == ""
    stop = project.hook("Stop", payload("Stop", project, last_assistant_message="Done."))
    assert stop.returncode == 0 and stop.seconds < 3
    assert [item["tool"] for item in project.spooled()] == ["record_activity"] * 2
    assert project.log().count("HTTP 429") == 1

    # After Retry-After, with room in the budget again, the next hook replays the spool
    # in order, then sends its own call: every tool use reaches the server.
    assert wait_for(lambda: down_for(project) <= 0, timeout=25)
    settings.API_RATE_LIMIT = "1200/minute"
    project.hook("PostToolUse", edit_payload(project, "src/c.py"), env=FAST_FLUSH)
    assert project.spooled() == []
    edits = [summary.rsplit("/", 1)[-1] for summary in ToolInvocation.objects.filter(
        session_id=session_id, tool="Edit").order_by("id").values_list("summary", flat=True)]
    assert edits == ["a.py", "c.py"]
    assert ActiveSession.objects.get(session_id=session_id).conversation_summary


def test_a_429_on_the_edit_check_allows_the_edit_and_backs_off(live_api, tmp_path,
                                                               settings):
    url, token = live_api
    project = Project(tmp_path / "project", url, token)
    project.hook("SessionStart", payload("SessionStart", project, source="startup"))
    settings.API_RATE_LIMIT = "4 per 20 seconds"
    spend_budget(url, token)
    check = project.hook("PreEdit", edit_payload(project, "src/x.py", "PreToolUse"))
    assert check.returncode == 0 and check.stdout == ""  # allowed, nothing said
    assert "HTTP 429" in project.log()
    assert down_for(project) > 5
