"""The overview's file claims: who is editing what now (held claims, files held, contested
files, edits blocked in the last 24 h, the contested files), in overview.json, the page and
its fragment, following the project switcher; every figure recomputed in the test."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from claims.services.queries import live_claim_counts
from sessions.models import SessionEvent
from tests.claims.test_claims import expire, set_policy
from tests.console.test_projects import switch

pytestmark = pytest.mark.django_db


@pytest.fixture
def editing(tools, make_task):
    """Default project: t1 (session a, agent-a) and t2 (session b) both hold src/x.py, a
    also src/y.py; t3 (session d) claimed src/y.py too but its claim lapsed lately. Project
    web: w1 (session w) holds src/x.py (the same path in another repository)."""
    for task in ("t1", "t2", "t3"):
        make_task(task)
    tools.ok("create_project", {"projectId": "web", "name": "Web shop"})
    make_task("w1", projectId="web")
    tools.ok("start_session", {"sessionId": "a", "taskId": "t1", "projectDir": "/repo",
                               "agentId": "agent-a"})
    tools.ok("start_session", {"sessionId": "b", "taskId": "t2", "projectDir": "/repo"})
    tools.ok("start_session", {"sessionId": "d", "taskId": "t3", "projectDir": "/repo"})
    tools.ok("start_session", {"sessionId": "w", "taskId": "w1", "projectDir": "/web"})
    tools.ok("claim_files", {"sessionId": "a", "paths": ["src/x.py"]})
    tools.ok("claim_files", {"sessionId": "b", "paths": ["src/x.py"]})
    tools.ok("claim_files", {"sessionId": "d", "paths": ["src/y.py"]})
    expire("d", "src/y.py", 30)
    tools.ok("claim_files", {"sessionId": "a", "paths": ["src/y.py"]})
    tools.ok("claim_files", {"sessionId": "w", "paths": ["src/w.py"]})
    return tools


def blocked(tools, session: str, path: str) -> None:
    answer = tools.ok("claim_files", {"sessionId": session, "paths": [path]})
    assert answer["blocked"] is True


def test_overview_json_counts_live_claims_and_lists_contested_files(admin_client, editing):
    data = admin_client.get(reverse("console_overview")).json()["fileClaims"]
    counts = live_claim_counts(None)
    assert (data["heldClaims"], data["filesHeld"], data["contestedFiles"]) == (
        counts["claims"], counts["files"], counts["contested"]) == (4, 3, 1)
    assert data["blockedLast24h"] == 0
    # The live conflict first, then the overlap whose claim lapsed lately.
    assert [(f["path"], f["live"]) for f in data["contested"]] == [
        ("src/x.py", True), ("src/y.py", False)]
    live = data["contested"][0]
    assert sorted(live["tasks"]) == ["t1", "t2"] and sorted(live["sessions"]) == ["a", "b"]
    assert live["agents"] == ["agent-a"] and 0 <= live["lastEditSecondsAgo"] < 60


def test_blocked_edits_of_the_last_day_count_for_their_project(admin_client, editing):
    set_policy(editing, "block")
    blocked(editing, "b", "src/y.py")
    blocked(editing, "d", "src/x.py")
    # A refusal older than a day no longer counts (events are immutable: written old).
    SessionEvent.objects.create(session_id="b", sequence=10_000, event_type="system_event",
                                role="system", content="edit_blocked", parts={},
                                created_at=timezone.now() - timedelta(hours=25))
    assert SessionEvent.objects.filter(event_type="system_event",
                                       content="edit_blocked").count() == 3
    url = reverse("console_overview")
    assert admin_client.get(url).json()["fileClaims"]["blockedLast24h"] == 2
    switch(admin_client, "web")
    assert admin_client.get(url).json()["fileClaims"]["blockedLast24h"] == 0


def test_the_claims_follow_the_switcher(admin_client, editing, settings):
    url = reverse("console_overview")
    switch(admin_client, "web")
    web = admin_client.get(url).json()["fileClaims"]
    assert (web["heldClaims"], web["filesHeld"], web["contestedFiles"]) == (1, 1, 0)
    assert web["contested"] == []
    switch(admin_client, settings.MCP_PROJECT_ID)
    default = admin_client.get(url).json()["fileClaims"]
    assert (default["heldClaims"], default["filesHeld"], default["contestedFiles"]) == (3, 2, 1)
    assert [f["path"] for f in default["contested"]] == ["src/x.py", "src/y.py"]


def test_the_page_and_fragment_show_the_claims(admin_client, editing):
    for url in (reverse("admin:index"), reverse("console_overview_fragment")):
        page = admin_client.get(url).content.decode()
        assert 'id="claims-held">4<' in page and 'id="claims-files">3<' in page
        assert 'id="claims-contested" class="severity-critical">1<' in page
        assert 'id="edits-blocked">0<' in page
        assert 'id="contested-files"' in page and \
            '<code class="breakable">src/<wbr>x.<wbr>py</code>' in page
        # The row is a link to the claims page of that file; the heading counts the rows.
        assert '/admin/claims-and-locks/?path=src%2Fx.py"' in page
        rows = page.count('<tr class="contested-')
        assert rows >= 1 and f'id="contested-listed-count">{rows}<' in page
        assert 'class="contested-live"' in page and "agent-a" in page
    switch(admin_client, "web")
    fragment = admin_client.get(reverse("console_overview_fragment")).content.decode()
    assert 'id="claims-held">1<' in fragment and 'id="contested-files"' not in fragment
    assert "No file is claimed by two tasks." in fragment
