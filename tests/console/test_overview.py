"""The fleet overview: every figure recomputed from the database in the test."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from conflicts.models import ContextConflict
from contexts.models import ContextVersion
from foundation.core.jobruns import record_job_run
from foundation.core.models import JobRun
from sessions.models import ActiveSession, ToolInvocation
from sessions.services import recovery

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(tools, make_task):
    """Two live sessions, one crashed, conflicts of three severities, an orphaned task."""
    make_task("t-live", status="in_progress")
    make_task("t-orphan", status="in_progress")
    make_task("t-idle")
    tools.ok("start_session", {"sessionId": "s-live", "taskId": "t-live", "agentId": "agent-7"})
    tools.ok("start_session", {"sessionId": "s-other"})
    tools.ok("start_session", {"sessionId": "s-crash", "taskId": "t-orphan"})
    recovery.mark_crashed("s-crash")
    tools.ok("save_context_snapshot", {"taskId": "t-live", "sessionId": "s-live",
                                       "updates": {"currentPhase": "two"}})
    for severity, task in (("critical", "t-live"), ("high", "t-idle"), ("high", "t-orphan")):
        tools.ok("report_conflict", {"taskAId": task, "severity": severity,
                                     "description": f"{severity} on {task}"})
    return tools


def test_overview_json_matches_the_database(admin_client, fleet):
    data = admin_client.get(reverse("console_overview")).json()
    active = ActiveSession.objects.filter(status="active")
    assert data["activeSessionCount"] == active.count() == 2
    live = next(s for s in data["activeSessions"] if s["sessionId"] == "s-live")
    assert (live["agentId"], live["taskId"]) == ("agent-7", "t-live")
    assert 0 <= live["heartbeatAgeSeconds"] < 60
    assert [s["sessionId"] for s in data["recovery"]] == ["s-crash"]
    assert data["recovery"][0]["promptUrl"].endswith("#resume-prompt")
    unresolved = ContextConflict.objects.filter(resolution_status="unresolved")
    assert data["conflicts"]["unresolved"] == {
        s: unresolved.filter(severity=s).count() for s in ("critical", "high", "medium", "low")}
    assert data["conflicts"]["unresolved"]["high"] == 2
    assert [t["taskId"] for t in data["orphanedTasks"]] == ["t-orphan"]
    since = timezone.now() - timedelta(hours=1)
    assert data["activity"]["savesLastHour"] == ContextVersion.objects.filter(
        created_at__gte=since).count() == 4
    assert data["activity"]["toolCallsLastHour"] == ToolInvocation.objects.count() >= 1
    assert len(data["activity"]["minutes"]) == 60
    assert data["cache"]["available"] is True


def test_the_resume_prompt_link_shows_the_prompt(admin_client, fleet):
    data = admin_client.get(reverse("console_overview")).json()
    page = admin_client.get(data["recovery"][0]["url"]).content.decode()
    assert 'id="resume-prompt"' in page and "s-crash" in page


def test_cache_hit_rate_is_redis_s_own(admin_client, fleet):
    from foundation.backends import redis_store

    def counters() -> tuple[int, int]:
        stats = redis_store.run(lambda r: r.info("stats"))
        return stats["keyspace_hits"], stats["keyspace_misses"]

    # The counters are the server's, which other clients (parallel test workers) move
    # meanwhile: the overview's lie between Redis's own before and after it.
    before = counters()
    data = admin_client.get(reverse("console_overview")).json()["cache"]
    after = counters()
    assert before[0] <= data["hits"] <= after[0] and before[1] <= data["misses"] <= after[1]
    total = data["hits"] + data["misses"]
    assert data["hitRate"] == (round(data["hits"] / total, 4) if total else None)


def test_jobs_show_last_run_stale_and_never_run(admin_client, settings):
    settings.HOT_SYNC_INTERVAL_SECONDS = 60
    with record_job_run("hot sync") as run:
        run.ok("3 task(s) cached")
    with record_job_run("crash sweep"):
        pass
    JobRun.objects.filter(job_name="hot sync").update(
        started_at=timezone.now() - timedelta(seconds=121))
    jobs = {j["name"]: j for j in admin_client.get(reverse("console_overview")).json()["jobs"]}
    assert set(jobs) == {"crash sweep", "hot sync", "conflict detection", "graph sync",
                         "stale-session cleanup", "retention", "pause auto-resume",
                         "pending-save replay", "checkpoint check"}
    assert jobs["hot sync"]["stale"] is True and jobs["hot sync"]["summary"] == "3 task(s) cached"
    assert (jobs["crash sweep"]["state"], jobs["crash sweep"]["stale"]) == ("ok", False)
    assert jobs["retention"]["state"] == "never run"
    page = admin_client.get(reverse("admin:index")).content.decode()
    assert 'id="job-hot-sync" class="job job-stale"' in page


def test_disabled_job_is_shown_disabled(admin_client, settings):
    settings.ENABLE_CONFLICT_DETECTION = False
    jobs = {j["name"]: j for j in admin_client.get(reverse("console_overview")).json()["jobs"]}
    assert jobs["conflict detection"]["state"] == "disabled"


def test_index_page_and_fragment_render_the_overview(admin_client, fleet):
    index = admin_client.get(reverse("admin:index"))
    html = index.content.decode()
    assert index.status_code == 200
    assert 'id="fleet-overview"' in html and 'id="activity-chart"' in html
    assert 'id="active-session-count">2<' in html and 'id="recovery-count">1<' in html
    assert "console/overview.js" in html
    assert "Agent sessions" in html  # the app list is still there
    fragment = admin_client.get(reverse("console_overview_fragment")).content.decode()
    assert 'id="recovery-count">1<' in fragment and "<html" not in fragment


@pytest.mark.parametrize("name", ["console_index", "console_overview",
                                  "console_overview_fragment"])
def test_overview_is_staff_only(client, db, name):
    response = client.get(reverse(name))
    assert response.status_code == 302 and "/login/" in response.url


def test_lists_are_capped_but_counts_are_complete(admin_client, fleet, monkeypatch):
    monkeypatch.setattr("console.services.overview.LISTED_ROWS", 1)
    fleet.ok("create_task", {"taskId": "t-orphan-2", "name": "again", "status": "in_progress"})
    fleet.ok("start_session", {"sessionId": "s-crash-2", "taskId": "t-orphan-2"})
    recovery.mark_crashed("s-crash-2")
    data = admin_client.get(reverse("console_overview")).json()
    assert (len(data["activeSessions"]), data["activeSessionCount"]) == (1, 2)
    assert (len(data["orphanedTasks"]), data["orphanedTaskCount"]) == (1, 2)


def test_a_job_links_to_its_runs(admin_client):
    with record_job_run("crash sweep") as run:
        run.ok("0 session(s) marked crashed")
    jobs = {j["name"]: j for j in admin_client.get(reverse("console_overview")).json()["jobs"]}
    runs = admin_client.get(jobs["crash sweep"]["url"])
    assert runs.status_code == 200 and runs.context["cl"].result_count == 1
    assert "0 session(s) marked crashed" in runs.content.decode()
