"""What the issue's "done when" asks, in a real browser: from the overview alone a newcomer
finds the crashed session and its resume prompt, resolves the waiting conflicts, rolls back
a bad save and edits the global context; the overview's figures match the database."""

from __future__ import annotations

import contextlib
import json
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from conflicts.models import ContextConflict
from contexts.models import ContextVersion, GlobalContext, TaskContext
from sessions.models import ActiveSession, ToolInvocation
from sessions.services import recovery
from sessions.services.work import orphaned_tasks

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def fast_overview_refresh(monkeypatch):
    # The page re-fetches the overview every REFRESH_SECONDS; one second keeps tests short.
    monkeypatch.setattr("console.views.REFRESH_SECONDS", 1)


def contradiction(tools, task_a: str, task_b: str, severity: str = "critical") -> None:
    tools.ok("report_conflict", {
        "taskAId": task_a, "taskBId": task_b, "severity": severity,
        "description": f"{task_a} and {task_b} disagree on the phase",
        "evidence": {"field": "currentPhase", "expectedValue": "design",
                     "actualValue": "build", "location": "spec"}})


@pytest.fixture
def fleet(tools):
    for task_id, phase, status in (("login", "design", "in_progress"),
                                   ("signup", "build", "in_progress"),
                                   ("billing", "build", "in_progress"),
                                   ("reports", "design", "pending")):
        tools.ok("create_task", {"taskId": task_id, "name": f"Task {task_id}",
                                 "currentPhase": phase, "status": status})
    tools.ok("start_session", {"sessionId": "sess-live", "taskId": "login", "agentId": "opus"})
    tools.ok("start_session", {"sessionId": "sess-crashed", "taskId": "billing",
                               "agentId": "sonnet"})
    tools.ok("save_context_snapshot", {"taskId": "billing", "sessionId": "sess-crashed",
                                       "updates": {"currentPhase": "half-done"}})
    recovery.mark_crashed("sess-crashed")
    contradiction(tools, "login", "signup")
    contradiction(tools, "reports", "billing", severity="high")
    return tools


def db_figures() -> dict[str, str]:
    since = timezone.now() - timedelta(hours=1)
    unresolved = ContextConflict.objects.filter(resolution_status="unresolved")
    return {
        "#active-session-count": str(ActiveSession.objects.filter(status="active").count()),
        "#recovery-count": str(ActiveSession.objects.filter(recovery_needed=True).count()),
        "#conflicts-unresolved": str(unresolved.count()),
        "#conflicts-critical": str(unresolved.filter(severity="critical").count()),
        "#conflicts-high": str(unresolved.filter(severity="high").count()),
        # Orphaned work, the definition in docs/user-guide/agent-calls.md (sessions.services.work)
        "#orphaned-count": str(len(orphaned_tasks())),
        "#saves-last-hour": str(ContextVersion.objects.filter(created_at__gte=since).count()),
        "#tool-calls-last-hour": str(ToolInvocation.objects.filter(timestamp__gte=since)
                                     .count()),
    }


def test_overview_figures_match_the_database_and_update_without_reload(console, fleet):
    page = console.open("/admin/")
    expected = db_figures()
    assert {selector: console.text(selector) for selector in expected} == expected
    assert expected["#recovery-count"] == "1" and expected["#orphaned-count"] == "1"  # billing
    assert page.locator("#activity-chart rect.bar-saves").count() >= 1
    assert "never run" in console.text("#job-retention")
    console.screenshot("overview")

    # A new conflict and a new session appear without reloading the page.
    page.evaluate("window.__notReloaded = true")
    contradiction(fleet, "signup", "reports")
    fleet.ok("start_session", {"sessionId": "sess-new", "taskId": "signup"})
    page.wait_for_function(
        "document.querySelector('#conflicts-critical').textContent.trim() === '2'"
        " && document.querySelector('#active-session-count').textContent.trim() === '2'")
    assert page.evaluate("window.__notReloaded") is True
    # The session row commits before its call's tool-history row: a refresh between the two
    # shows the new session with the previous call count. The page's next refresh catches up.
    expected = db_figures()
    with contextlib.suppress(PlaywrightTimeout):
        page.wait_for_function(
            "expected => Object.entries(expected).every("
            "([selector, text]) => document.querySelector(selector).textContent.trim() === text)",
            arg=expected, timeout=15_000)
    assert {selector: console.text(selector) for selector in expected} == expected
    console.screenshot("overview-updated")


def test_find_the_crashed_session_and_read_its_resume_prompt(console, fleet):
    page = console.open("/admin/")
    row = page.locator("#recovery-sessions tr", has_text="sess-crashed")
    row.locator("a.resume-prompt-link").click()
    prompt = page.locator("#resume-prompt")
    prompt.wait_for()
    text = prompt.inner_text()
    assert "Recovery Required" in text and "billing" in text and "half-done" in text
    console.screenshot("resume-prompt")
    assert "started on task billing" in console.text("#session-timeline")


def test_resolve_conflicts_by_clicks_use_a_and_merge_with_an_edited_value(console, fleet):
    page = console.open("/admin/")
    page.click("#conflict-counts a:text('critical')")
    page.click("#result_list a:text('spec_contradiction')")
    console.screenshot("conflict-page")
    page.click("button[value=use_a]")
    page.wait_for_selector("text=nothing left to do")
    conflict = ContextConflict.objects.get(task_a_id="login")
    assert (conflict.resolution_status, conflict.resolution["action"], conflict.resolved_by) \
        == ("resolved", "use_a", "operator")
    assert TaskContext.objects.get(task_id="signup").current_phase == "design"
    console.screenshot("use-a-done")

    console.open("/admin/")
    page.click("#conflict-counts a:text('high')")
    page.click("#result_list a:text('spec_contradiction')")
    value = json.loads(page.input_value("#resolved_value"))
    assert value == {"reports": {"currentPhase": "design"},
                     "billing": {"currentPhase": "half-done"}}
    value["billing"]["currentPhase"] = "agreed in review"
    page.fill("#resolved_value", json.dumps(value, indent=2))
    console.screenshot("merge-edited")
    page.click("button[value=merge]")
    page.wait_for_selector("text=nothing left to do")
    conflict = ContextConflict.objects.get(task_a_id="reports")
    assert (conflict.resolution_status, conflict.resolution["action"]) == ("resolved", "merge")
    assert TaskContext.objects.get(task_id="billing").current_phase == "agreed in review"
    console.open("/admin/")
    assert console.text("#conflicts-unresolved") == "0"


def test_roll_back_a_bad_save_from_the_diff_page(console, fleet):
    fleet.ok("save_context_snapshot", {"taskId": "reports", "changeSummary": "oops",
                                       "updates": {"currentPhase": "deleted everything"}})
    task = TaskContext.objects.get(task_id="reports")
    page = console.open(f"/admin/contexts/taskcontext/{task.pk}/change/")
    page.click("#version-history tr:has-text('v1') a:text('diff with current')")
    diff = page.locator("#version-diff")
    diff.wait_for()
    assert "deleted everything" in diff.inner_text() and "design" in diff.inner_text()
    console.screenshot("task-diff")
    page.click("#version-history tr:has-text('v1') a:text('roll back to this version')")
    page.wait_for_selector("#rollback-changes")
    console.screenshot("rollback-confirm")
    page.click("input[value='Yes, roll back']")
    page.wait_for_selector("text=Rolled back to version 1")
    task.refresh_from_db()
    assert (task.current_phase, task.version) == ("design", 3)
    assert ContextVersion.objects.get(task_id="reports", version=3).created_by == \
        "admin:operator"
    console.screenshot("rolled-back")


def test_edit_the_global_context(console):
    page = console.open("/admin/")
    page.click("#fleet-overview a:text('global context')")
    page.click("#result_list a:text('story-portal-app')")
    page.wait_for_selector("#global-context-form")
    before = GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID).version

    page.fill("#id_hard_rules", '["Never push to main", ')  # unfinished JSON
    assert "invalid" in page.get_attribute("#id_hard_rules", "class")
    page.click("input[value='Save a new version']")
    assert "E1612" in console.text("#form-error")
    console.screenshot("global-invalid")

    page.fill("#id_hard_rules", '["Never push to main", "Tests before commits"]')
    page.fill("#id_services", '{"postgres": "localhost:5432"}')
    page.fill("#id_change_summary", "house rules")
    page.click("input[value='Save a new version']")
    page.wait_for_selector("text=Saved: hardRules, services")
    row = GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID)
    assert row.hard_rules == ["Never push to main", "Tests before commits"]
    assert (row.services, row.version) == ({"postgres": "localhost:5432"}, before + 1)
    assert console.text("#global-version") == str(row.version)
    console.screenshot("global-saved")

    page.click(f"#global-versions tr:has-text('v{before}') a.rollback-link")
    page.wait_for_selector("#rollback-changes")
    page.click("input[value='Yes, roll back']")
    page.wait_for_selector(f"text=Rolled back to version {before}")
    row.refresh_from_db()
    assert (row.hard_rules, row.version) == ([], before + 2)
    console.screenshot("global-rolled-back")
