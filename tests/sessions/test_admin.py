"""The admin console: list, session page with the resume prompt, actions via services."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from sessions.models import ActiveSession
from tests.sessions.helpers import backdate, status_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client_() -> Client:
    user = User.objects.create(username="root", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(user)
    return client


def test_list_page_and_session_page(tools, admin_client_):
    tools.ok("create_task", {"taskId": "t1", "name": "Parser"})
    tools.ok("start_session", {"sessionId": "s1", "taskId": "t1", "agentId": "opus"})
    tools.ok("append_session_event", {"sessionId": "s1", "type": "user_message",
                                      "role": "user", "content": "hello there"})
    tools.ok("heartbeat", {"sessionId": "s1", "unsavedChanges": [
        {"type": "edit", "path": "src/x.py", "description": "wip"}]})
    tools.ok("report_compaction", {"sessionId": "s1"})
    listing = admin_client_.get("/admin/agent_sessions/activesession/?status__exact=compacted")
    assert listing.status_code == 200 and b"s1" in listing.content
    pk = ActiveSession.objects.get(session_id="s1").pk
    page = admin_client_.get(f"/admin/agent_sessions/activesession/{pk}/change/")
    html = page.content.decode()
    assert page.status_code == 200
    for expected in ("## Recovery Required: compaction", "hello there", "src/x.py",
                     "append_session_event", "opus", "Tasks worked on"):
        assert expected in html, expected
    assert "<td>t1</td>" in html and "<td>as opus</td>" in html  # from graph_session_work


def test_actions_go_through_the_services(tools, admin_client_):
    tools.ok("start_session", {"sessionId": "live"})
    tools.ok("start_session", {"sessionId": "stale"})
    backdate("stale", 10)
    url = "/admin/agent_sessions/activesession/"
    pk = str(ActiveSession.objects.get(session_id="live").pk)
    admin_client_.post(url, {"action": "mark_crashed", "_selected_action": [pk]})
    assert status_of("live") == ("crashed", True, "crash")
    admin_client_.post(url, {"action": "mark_recovered", "_selected_action": [pk]})
    assert status_of("live") == ("recovered", False, "crash")
    response = admin_client_.post(url, {"action": "mark_recovered", "_selected_action": [pk]},
                                  follow=True)
    assert b"E1632" in response.content
