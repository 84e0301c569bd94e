"""Every console page fits 1280-1920 px wide with no horizontal scrolling (issue 23, item 4),
and /api/docs/ renders with no request leaving the machine (item 3).

The data is what makes a page wide: long task, session, agent and checkpoint ids (letters,
digits and ``. _ : -`` with no break opportunity), long paths, long diff values, five
conflicts, a handoff, relationships. Each page is measured at 1280, 1440 and 1920 px:
the document must not be wider than the window, no table or block may hide content behind
its own scroll bar or an ``overflow: hidden`` edge (a clipped "claude-co"), and the columns
an operator reads (the overview's agent, task and heartbeat age; the task list's orphaned
marker) must be inside the window. What was measured goes to
``.artifacts/console-layout.json`` for a person to read.
"""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from conflicts.models import ContextConflict
from contexts.models import Checkpoint, ContextVersion, GlobalContext, TaskContext
from foundation.core.models import ApiToken, JobRun
from graph.models import TaskRelationship
from sessions.models import ActiveSession, SessionHandoff
from sessions.services import recovery
from tests.browser.conftest import ROOT

pytestmark = pytest.mark.slow

WIDTHS = (1280, 1440, 1920)
# Ids as long as the tools take them in practice, with no hyphen or space to break at.
LONG_TASK = ("checkout_payment_provider_integration.retry_with_idempotency_keys."
             "exponential_backoff_for_the_eu_region_and_the_us_region")
LONG_TASK_B = ("checkout_payment_provider_integration.webhook_signature_verification."
               "replay_protection_for_every_provider")
LONG_SESSION = "sess_2f7c9a1e4b5d6c7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a"
LONG_AGENT = "claude-code-opus-4-1-20250805-subagent-frontend-refactorer-number-twelve"
LONG_PATH = ("src/services/payments/providers/stripe/internal/webhooks/handlers/"
             "signature_verification/replay_protection_middleware_factory.py")
LONG_DIR = "/home/operator/workspaces/acme-corporation/monorepo-checkout-payment-platform"
LONG_TEXT = ("The retry policy wraps every provider call: idempotency keys are derived from "
             "the order id and the attempt number, backoff doubles from 200 ms up to 30 s, "
             "and a circuit breaker opens after five consecutive failures of one provider. ")


@pytest.fixture(autouse=True)
def fast_overview_refresh(monkeypatch):
    monkeypatch.setattr("console.views.REFRESH_SECONDS", 1)


@pytest.fixture
def busy_fleet(tools):
    """Eight tasks, relationships, checkpoints, live / crashed / ended sessions with long
    ids, a task lock, a contested file, a handoff, five conflicts, two global-context
    versions."""
    tools.ok("create_project", {"projectId": "acme-checkout-platform",
                                "name": "Acme checkout platform (payments, webhooks, refunds)"})
    tasks = [(LONG_TASK, "in_progress"), (LONG_TASK_B, "in_progress"),
             ("refunds_ledger_reconciliation_nightly_job_with_partial_captures", "in_progress"),
             ("login", "in_progress"), ("signup", "pending"), ("billing", "in_progress"),
             ("reports", "pending"), ("audit_log_export_to_the_data_warehouse", "completed")]
    for task_id, status in tasks:
        tools.ok("create_task", {
            "taskId": task_id, "name": f"Task {task_id.replace('_', ' ')}", "status": status,
            "currentPhase": "design", "keyFiles": [LONG_PATH, f"src/{task_id}/module.py"],
            "technicalDecisions": [LONG_TEXT]})
    tools.ok("save_context_snapshot", {
        "taskId": LONG_TASK, "changeSummary": "moved the retry policy into the provider layer "
        "and renamed every handler after the provider it serves",
        "updates": {"currentPhase": "build", "immediateContext": {
                        "workingOn": LONG_TEXT * 3, "nextStep": LONG_PATH,
                        "blockers": [LONG_TASK_B]},
                    "keyFiles": [LONG_PATH, LONG_PATH.replace("stripe", "adyen"),
                                 LONG_PATH.replace("stripe", "braintree")],
                    "technicalDecisions": [LONG_TEXT, LONG_TEXT.upper()]}})
    tools.ok("add_task_relationship", {"sourceTaskId": LONG_TASK, "targetTaskId": LONG_TASK_B,
                                       "relationshipType": "blocks", "reason": LONG_TEXT})
    tools.ok("add_task_relationship", {"sourceTaskId": LONG_TASK_B, "targetTaskId": "login",
                                       "relationshipType": "depends_on"})
    tools.ok("create_checkpoint", {"taskId": LONG_TASK, "includeTasks": [LONG_TASK_B, "login"],
                                   "label": "before_the_provider_layer_refactoring_"
                                            "of_every_webhook_handler_and_retry_policy",
                                   "description": LONG_TEXT})
    tools.ok("start_session", {"sessionId": LONG_SESSION, "taskId": LONG_TASK,
                               "agentId": LONG_AGENT, "projectDir": LONG_DIR,
                               "gitBranch": "feature/" + LONG_TASK})
    tools.ok("start_session", {"sessionId": LONG_SESSION[:-1] + "b", "taskId": LONG_TASK_B,
                               "agentId": LONG_AGENT + "-bis", "projectDir": LONG_DIR})
    # The lock shows on the task page and the rollback confirmation.
    tools.ok("acquire_task_lock", {"taskId": LONG_TASK, "sessionId": LONG_SESSION,
                                   "ttlSeconds": 3600})
    tools.ok("claim_files", {"sessionId": LONG_SESSION, "paths": [LONG_PATH]})
    tools.call("claim_files", {"sessionId": LONG_SESSION[:-1] + "b", "paths": [LONG_PATH]})
    tools.ok("heartbeat", {"sessionId": LONG_SESSION, "conversationSummary": LONG_TEXT,
                           "unsavedChanges": [{"type": "modified", "path": LONG_PATH,
                                               "description": LONG_TEXT}]})
    for kind, role in (("system_event", "system"), ("validation_gate", "system"),
                       ("memory_recall", "system")):
        tools.ok("append_session_event", {"sessionId": LONG_SESSION, "type": kind,
                                          "role": role, "content": LONG_TEXT})
    tools.ok("start_session", {"sessionId": "sess_crashed_" + LONG_SESSION[5:40],
                               "taskId": "billing", "agentId": LONG_AGENT})
    recovery.mark_crashed("sess_crashed_" + LONG_SESSION[5:40])
    tools.ok("start_session", {"sessionId": "sess_ended_" + LONG_SESSION[5:40],
                               "taskId": "login", "agentId": LONG_AGENT, "projectDir": LONG_DIR})
    tools.ok("end_session", {"sessionId": "sess_ended_" + LONG_SESSION[5:40],
                             "summary": LONG_TEXT * 2, "openItems": [LONG_PATH, LONG_TEXT]})
    for a, b, severity in ((LONG_TASK, LONG_TASK_B, "critical"), ("login", "signup", "high"),
                           ("billing", "reports", "medium"), (LONG_TASK_B, "billing", "low"),
                           ("refunds_ledger_reconciliation_nightly_job_with_partial_captures",
                            LONG_TASK, "critical")):
        tools.ok("report_conflict", {
            "taskAId": a, "taskBId": b, "severity": severity,
            "description": f"{a} and {b} disagree on {LONG_PATH}",
            "evidence": {"field": "keyFiles", "expectedValue": [LONG_PATH] * 3,
                         "actualValue": LONG_TEXT * 2, "location": LONG_PATH}})
    tools.ok("update_global_context", {"projectName": "Story portal", "hardRules": [LONG_TEXT],
                                       "keyPaths": {"webhooks": LONG_PATH}})
    tools.ok("update_global_context", {"hardRules": [LONG_TEXT, LONG_TEXT.upper()],
                                       "keyPaths": {"webhooks": LONG_PATH, "docs": LONG_DIR},
                                       "changeSummary": LONG_TEXT})
    now = timezone.now()
    JobRun.objects.create(job_name="crash_sweep", started_at=now - timedelta(seconds=30),
                          finished_at=now, outcome="ok", summary=LONG_TEXT[:200] + LONG_PATH)
    return tools


def console_pages() -> list[tuple[str, str]]:
    """(label, path) of every page of the console, for the seeded data."""
    task = TaskContext.objects.get(task_id=LONG_TASK)
    global_row = GlobalContext.objects.get(project_id="story-portal-app")
    checkpoint = Checkpoint.objects.filter(task_id=LONG_TASK).first()
    conflict = ContextConflict.objects.filter(task_a_id=LONG_TASK).first()
    session = ActiveSession.objects.get(session_id=LONG_SESSION)
    crashed = ActiveSession.objects.filter(recovery_needed=True).first()
    handoff = SessionHandoff.objects.first()
    relationship = TaskRelationship.objects.first()
    version = ContextVersion.objects.filter(task_id=LONG_TASK).order_by("version").first()
    return [
        ("overview", "/admin/"),
        ("tasks", "/admin/contexts/taskcontext/"),
        ("orphaned-tasks", "/admin/contexts/taskcontext/?orphaned=yes"),
        ("task", f"/admin/contexts/taskcontext/{task.pk}/change/"),
        ("task-diff", f"/admin/contexts/taskcontext/{task.pk}/change/?diff=1"),
        ("task-rollback", f"/admin/contexts/taskcontext/{task.pk}/rollback/"
                          "?type=version&version=1"),
        ("task-rollback-checkpoint", f"/admin/contexts/taskcontext/{task.pk}/rollback/"
                                     f"?type=checkpoint&checkpoint={checkpoint.checkpoint_id}"),
        ("versions", "/admin/contexts/contextversion/"),
        ("version", f"/admin/contexts/contextversion/{version.pk}/change/"),
        ("checkpoints", "/admin/contexts/checkpoint/"),
        ("checkpoint", f"/admin/contexts/checkpoint/{checkpoint.pk}/change/"),
        ("global-contexts", "/admin/contexts/globalcontext/"),
        ("global-context", f"/admin/contexts/globalcontext/{global_row.pk}/change/"),
        ("global-context-diff", f"/admin/contexts/globalcontext/{global_row.pk}/change/?diff=1"),
        ("global-context-rollback", f"/admin/contexts/globalcontext/{global_row.pk}/rollback/"
                                    "?version=1"),
        ("sessions", "/admin/agent_sessions/activesession/"),
        ("session", f"/admin/agent_sessions/activesession/{session.pk}/change/"),
        ("crashed-session", f"/admin/agent_sessions/activesession/{crashed.pk}/change/"),
        ("handoffs", "/admin/agent_sessions/sessionhandoff/"),
        ("handoff", f"/admin/agent_sessions/sessionhandoff/{handoff.pk}/change/"),
        ("conflicts", "/admin/conflicts/contextconflict/"),
        ("conflict", f"/admin/conflicts/contextconflict/{conflict.pk}/change/"),
        ("relationships", "/admin/graph/taskrelationship/"),
        ("relationship", f"/admin/graph/taskrelationship/{relationship.pk}/change/"),
        ("graph", "/admin/graph/taskrelationship/task-graph/"),
        ("graph-of-task", f"/admin/graph/taskrelationship/task-graph/?taskId={LONG_TASK}"),
        ("tokens", "/admin/orchestrator/apitoken/"),
        ("token", f"/admin/orchestrator/apitoken/{ApiToken.objects.first().pk}/change/"),
        ("job-runs", "/admin/orchestrator/jobrun/"),
        ("job-run", f"/admin/orchestrator/jobrun/{JobRun.objects.first().pk}/change/"),
        ("users", "/admin/auth/user/"),
        ("user", f"/admin/auth/user/{User.objects.first().pk}/change/"),
        ("groups", "/admin/auth/group/"),
        ("app-sessions", "/admin/agent_sessions/"),
        ("claims", "/admin/claims-and-locks/"),
        ("claims-of-task", f"/admin/claims-and-locks/?task={LONG_TASK}"),
        ("projects", "/admin/projects/"),
    ]


# Elements whose content is wider than their box while it cannot be seen: a scroll bar of
# their own (overflow auto / scroll) or a cut edge (overflow hidden / clip). Form fields
# scroll their text by nature, the graph pans by design.
MEASURE = """() => {
  const doc = document.documentElement;
  const clipped = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.closest('textarea, select, input, svg, #task-graph, .selector, .visually-hidden,'
                   + ' #nav-sidebar')) continue;
    const style = getComputedStyle(el);
    if (style.overflowX === 'visible' || style.display === 'none') continue;
    if (el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      clipped.push(`${el.tagName.toLowerCase()}${el.id ? '#' + el.id : ''}` +
                   `${el.className && typeof el.className === 'string' ?
                      '.' + el.className.trim().split(/\\s+/).join('.') : ''}` +
                   ` ${el.scrollWidth}>${el.clientWidth}`);
    }
  }
  return {scrollWidth: doc.scrollWidth, innerWidth: window.innerWidth,
          clipped: clipped.slice(0, 8)};
}"""

# Each column header (and its cells) must end inside the window and inside its own panel.
COLUMNS_VISIBLE = r"""(selector) => {
  const problems = [];
  for (const th of document.querySelectorAll(selector)) {
    const table = th.closest('table');
    const panel = table.closest('.module, .results, #content-main') || table.parentElement;
    const edge = Math.min(window.innerWidth, panel.getBoundingClientRect().right);
    const column = th.cellIndex;
    const cells = [th, ...[...table.querySelectorAll('tbody tr')]
                   .map(row => row.cells[column]).filter(Boolean)];
    for (const cell of cells) {
      const box = cell.getBoundingClientRect();
      if (box.width <= 0 || box.right > edge + 1 || cell.scrollWidth > cell.clientWidth + 1) {
        const text = node => node.textContent.replace(/\s+/g, ' ').trim();
        problems.push(`${text(th)}: ${text(cell).slice(0, 30)}` +
                      ` ends at ${Math.round(box.right)} > ${Math.round(edge)}`);
        break;
      }
    }
  }
  return problems;
}"""

KEY_COLUMNS = {
    # The overview's columns docs/user-guide/console.md promises; with "All projects" there is one more.
    "overview": ["#active-sessions th", "#recovery-sessions th", "#contested-files th",
                 "#periodic-jobs th", "#storage-projects th"],
    "tasks": ["#result_list thead th"],
    "orphaned-tasks": ["#result_list thead th"],
    "sessions": ["#result_list thead th"],
    "handoffs": ["#result_list thead th"],
    "conflicts": ["#result_list thead th"],
    "versions": ["#result_list thead th"],
    "checkpoints": ["#result_list thead th"],
    "task": ["#version-history th", "#task-checkpoints th"],
    "task-diff": ["#version-diff th"],
    "task-rollback": ["#rollback-changes th"],
    "global-context-diff": ["#global-diff th"],
    "global-context-rollback": ["#rollback-changes th"],
    "claims": ["#claims-table th", "#locks-table th"],
    "projects": ["#projects-table th"],
}


# The event-log type cells whose text takes more than one line box.
EVENT_TYPES_ON_TWO_LINES = """() => [...document.querySelectorAll('#event-log td.event-type')]
  .filter(td => { const range = document.createRange(); range.selectNodeContents(td);
                  return range.getClientRects().length > 1; })
  .map(td => td.textContent)"""


SCREENSHOTS = {(1280, "tasks"), (1280, "sessions"), (1280, "conflicts"), (1440, "overview"),
               (1440, "task-diff"), (1440, "task-rollback"), (1440, "conflict"),
               (1440, "session"), (1280, "graph")}


def measure(console, pages) -> tuple[dict, list[str]]:
    page = console.page
    results: dict[str, dict[int, dict]] = {}
    failures: list[str] = []
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for label, path in pages:
            response = page.goto(console.base_url + path)
            assert response is not None and response.status == 200, (label, path)
            assert "/login/" not in urlsplit(page.url).path, (label, "logged out")
            page.wait_for_load_state("load")
            if label == "overview":
                # The refreshed overview is the one an operator looks at all day.
                page.wait_for_function("Number(document.getElementById('fleet-overview')"
                                       ".getAttribute('data-refreshes') || 0) >= 1")
            if label.startswith("graph"):
                page.wait_for_selector("#task-graph svg, #task-graph canvas", state="attached")
            found = page.evaluate(MEASURE)
            hidden = [problem for selector in KEY_COLUMNS.get(label, [])
                      for problem in page.evaluate(COLUMNS_VISIBLE, selector)]
            results.setdefault(label, {})[width] = {**found, "hiddenColumns": hidden}
            if found["scrollWidth"] > found["innerWidth"]:
                failures.append(f"{label} at {width}px: page {found['scrollWidth']} px wide")
            if found["clipped"]:
                failures.append(f"{label} at {width}px: clipped {found['clipped']}")
            if hidden:
                failures.append(f"{label} at {width}px: columns not visible {hidden}")
            if (width, label) in SCREENSHOTS:
                console.screenshot(f"{label}-{width}")
    return results, failures


def test_every_console_page_fits_1280_to_1920_px_without_horizontal_scrolling(console,
                                                                             busy_fleet):
    pages = console_pages()
    results, failures = measure(console, pages)
    report = ROOT / ".artifacts" / "console-layout.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps(results, indent=1) + "\n")
    assert not failures, "\n".join(failures)

    page = console.page
    # An event's type stays whole on the session page: "system_event", not "system_eve nt".
    page.set_viewport_size({"width": 1440, "height": 900})
    console.open(dict(pages)["session"])
    assert page.locator("#event-log td.event-type").count() >= 3
    assert page.evaluate(EVENT_TYPES_ON_TWO_LINES) == []

    # The overview shows what docs/user-guide/console.md promises for a live session, uncut.
    page.set_viewport_size({"width": 1280, "height": 900})
    console.open("/admin/")
    row = page.locator(f"#active-sessions tr[data-session='{LONG_SESSION}']")
    assert row.count() == 1
    # Names before ids: the agent and the task's name whole, the ids shortened.
    task_name = f"Task {LONG_TASK.replace('_', ' ')}"
    assert all(value in row.inner_text() for value in (LONG_AGENT, task_name, "ago"))
    # The orphaned marker is a visible cell of the task list.
    console.open("/admin/contexts/taskcontext/")
    marker = page.locator("#result_list td.field-orphaned", has_text="orphaned").first
    box = marker.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 1280


def test_api_docs_render_offline(console, busy_fleet):
    """Swagger UI comes from the installed package: with every request that would leave
    the machine refused, /api/docs/ still lists the operations."""
    page = console.page
    local = urlsplit(console.base_url).netloc
    external: list[str] = []

    def refuse_outside(route) -> None:
        if urlsplit(route.request.url).netloc == local:
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort("internetdisconnected")

    page.context.route("**/*", refuse_outside)
    # Leave the console's overview first: its refresh (every second here) may be in flight,
    # and the navigation to the docs would abort it, a failed request not of the docs page.
    page.goto("about:blank")
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.goto(console.base_url + "/api/docs/")
    page.wait_for_selector("#swagger-ui .opblock-summary", timeout=30_000)
    operations = page.locator("#swagger-ui .opblock").count()
    assert operations >= 20, operations
    assert page.locator("#swagger-ui .opblock-summary-path",
                        has_text="/api/v1/tools/create_task/").count() == 1
    assert "Session Orchestrator API" in page.inner_text("#swagger-ui .info")
    assert external == [] and failed == [], (external, failed)
    # The page's assets are the package's, served by whitenoise from /static/.
    html = page.content()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn.jsdelivr.net" not in html
    console.screenshot("api-docs-offline")
