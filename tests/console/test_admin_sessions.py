"""The sessions console (console/admin/sessions.py): the list, the session page with its
timeline and resume prompt, and the end / release-locks / mark crashed / mark recovered
actions, each through the services."""

from __future__ import annotations

import pytest
from django.urls import reverse

from locks import services as locks
from sessions.models import ActiveSession
from tests.sessions.helpers import backdate, status_of

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:agent_sessions_activesession_changelist")


def run_action(admin_client, action: str, *session_ids: str):
    pks = [str(ActiveSession.objects.get(session_id=s).pk) for s in session_ids]
    return admin_client.post(CHANGELIST, {"action": action, "_selected_action": pks},
                             follow=True)


def test_timeline_lists_events_tools_compactions_and_the_handoff(admin_client, tools,
                                                                   make_task):
    make_task("tl-1")
    tools.ok("start_session", {"sessionId": "tl-s", "taskId": "tl-1", "projectDir": "/p"})
    tools.ok("append_session_event", {"sessionId": "tl-s", "type": "user_message",
                                      "role": "user", "content": "please fix the login"})
    tools.ok("save_context_snapshot", {"taskId": "tl-1", "sessionId": "tl-s",
                                       "updates": {"currentPhase": "fixing"}})
    tools.ok("report_compaction", {"sessionId": "tl-s"})
    tools.ok("end_session", {"sessionId": "tl-s", "summary": "login fixed"})
    session = ActiveSession.objects.get(session_id="tl-s")
    page = admin_client.get(reverse("admin:agent_sessions_activesession_change",
                                    args=[session.pk])).content.decode()
    timeline = page.split('id="session-timeline"')[1].split("</table>")[0]
    for kind, text in (("start", "started on task tl-1"), ("user_message", "fix the login"),
                       ("tool", "save_context_snapshot"), ("compaction", "compaction #1"),
                       ("handoff", "login fixed"), ("end", "ended")):
        assert f"timeline-{kind}" in timeline and text in timeline, kind
    assert timeline.index("started on task") < timeline.index("fix the login") < \
        timeline.index("ended (ended)")

    # A Codex session on another task takes that note: its timeline names where it came from.
    make_task("tl-2")
    tools.ok("start_session", {"sessionId": "tl-cx", "taskId": "tl-2", "agentId": "codex",
                               "agentKind": "codex"})
    taker = ActiveSession.objects.get(session_id="tl-cx")
    page = admin_client.get(reverse("admin:agent_sessions_activesession_change",
                                    args=[taker.pk])).content.decode()
    timeline = page.split('id="session-timeline"')[1].split("</table>")[0]
    assert "took the handoff note of session tl-s (on another task: tl-1)" in timeline


def test_end_action_ends_through_the_service(admin_client, tools):
    tools.ok("start_session", {"sessionId": "end-me"})
    # The admin capitalises messages ("End-me: ended").
    page = run_action(admin_client, "end_sessions", "end-me").content.decode().lower()
    assert "end-me: ended" in page
    assert ActiveSession.objects.get(session_id="end-me").status == "ended"
    again = run_action(admin_client, "end_sessions", "end-me").content.decode()
    assert "E1602" in again


def test_release_locks_frees_only_that_session_s_locks(admin_client, tools, make_task):
    for task in ("lk-1", "lk-2", "lk-3"):
        make_task(task)
    tools.ok("start_session", {"sessionId": "holder"})
    tools.ok("start_session", {"sessionId": "other"})
    locks.acquire_lock("lk-1", "holder")
    locks.acquire_lock("lk-2", "holder")
    locks.acquire_lock("lk-3", "other")
    page = run_action(admin_client, "release_locks", "holder").content.decode().lower()
    assert "holder: released lk-1, lk-2" in page
    assert locks.current_lock("lk-1") is None and locks.current_lock("lk-2") is None
    assert locks.current_lock("lk-3")["sessionId"] == "other"


def test_list_page_and_session_page(tools, admin_client):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "agentId": "opus"})
    tools.ok("append_session_event", {"sessionId": "s1", "type": "user_message",
                                      "role": "user", "content": "hello there"})
    tools.ok("heartbeat", {"sessionId": "s1", "unsavedChanges": [
        {"type": "edit", "path": "src/x.py", "description": "wip"}]})
    tools.ok("report_compaction", {"sessionId": "s1"})
    listing = admin_client.get("/admin/agent_sessions/activesession/?status__exact=compacted")
    assert listing.status_code == 200 and b"s1" in listing.content
    pk = ActiveSession.objects.get(session_id="s1").pk
    page = admin_client.get(f"/admin/agent_sessions/activesession/{pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    for expected in ("## Recovery Required: compaction", "hello there", "src/x.py",
                     "append_session_event", "opus", "Tasks worked on"):
        assert expected in html, expected
    assert '<code title="t1">t1</code>' in html and "<td>as opus</td>" in html  # session_work


def test_actions_go_through_the_services(tools, admin_client):
    tools.ok("start_session", {"sessionId": "live"})
    tools.ok("start_session", {"sessionId": "stale"})
    backdate("stale", 10)
    url = "/admin/agent_sessions/activesession/"
    pk = str(ActiveSession.objects.get(session_id="live").pk)
    admin_client.post(url, {"action": "mark_crashed", "_selected_action": [pk]})
    assert status_of("live") == ("crashed", True, "crash")
    admin_client.post(url, {"action": "mark_recovered", "_selected_action": [pk]})
    assert status_of("live") == ("recovered", False, "crash")
    response = admin_client.post(url, {"action": "mark_recovered", "_selected_action": [pk]},
                                  follow=True)
    assert b"E1632" in response.content
