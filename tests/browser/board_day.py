"""A team's day for the console's home page: three projects, twenty tasks, ten agent
sessions (live, late, paused, paused past its reset, ended, crashed), conflicts, file
claims (one file contested, one edit blocked) and task locks (one held by a live agent,
one left by the crashed agent).

Everything goes through the real tools, as agents would do it; only time is moved by hand
(a heartbeat made old, as a stalled agent's would be), since a test cannot wait minutes.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

from foundation.core.db import qualified
from foundation.core.tools import ToolContext, call_tool

PROJECTS = {"shop": "Web shop", "billing": "Billing API", "mobile": "Mobile app"}
TASKS = {
    "shop": [("shop-checkout", "Checkout flow"), ("shop-coupons", "Coupon codes"),
             ("shop-search", "Product search"), ("shop-reviews", "Customer reviews"),
             ("shop-cart", "Cart persistence"), ("shop-sitemap", "SEO sitemap"),
             ("shop-a11y", "Accessibility pass")],
    "billing": [("billing-invoices", "Invoice PDFs"), ("billing-tax", "Tax rates by region"),
                ("billing-refunds", "Refund workflow"), ("billing-dunning", "Dunning emails"),
                ("billing-webhooks", "Stripe webhooks"), ("billing-ledger", "Ledger export"),
                ("billing-audit", "Audit log")],
    "mobile": [("mobile-push", "Push notifications"), ("mobile-offline", "Offline sync"),
               ("mobile-login", "Login screen"), ("mobile-ui-kit", "UI kit buttons"),
               ("mobile-deeplinks", "Deep links"), ("mobile-crash", "Crash reporting")],
}
# (session, project, task, agent, state)
SESSIONS = [
    ("s-ada", "shop", "shop-checkout", "claude-ada", "live"),
    ("s-bo", "shop", "shop-coupons", "codex-bo", "live"),
    ("s-cy", "billing", "billing-invoices", "claude-cy", "live"),
    ("s-jo", "mobile", "mobile-ui-kit", "claude-jo", "live"),
    ("s-ivy", "mobile", "mobile-login", "codex-ivy", "live"),
    ("s-di", "billing", "billing-tax", "codex-di", "late"),
    ("s-eve", "mobile", "mobile-push", "claude-eve", "paused"),
    ("s-fay", "mobile", "mobile-offline", "claude-fay", "paused"),
    ("s-gus", "shop", "shop-search", "codex-gus", "ended"),
    ("s-hal", "billing", "billing-refunds", "claude-hal", "crashed"),
]
AS_BEAT = ToolContext("task", actor="celery-beat")


def age_heartbeat(session_id: str, seconds: float) -> None:
    """The session's last heartbeat ``seconds`` ago, as an agent that went quiet."""
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('active_sessions')} SET last_heartbeat = "
                       "now() - make_interval(secs => %s) WHERE session_id = %s",
                       [seconds, session_id])


def threshold_seconds() -> float:
    return float(settings.CRASH_THRESHOLD_MINUTES) * 60


def seed(tools) -> dict[str, str]:
    """Build the day; returns {session id: the state the board must show}."""
    for project_id, name in PROJECTS.items():
        tools.ok("create_project", {"projectId": project_id, "name": name})
        for task_id, task_name in TASKS[project_id]:
            tools.ok("create_task", {"taskId": task_id, "name": task_name,
                                     "projectId": project_id, "status": "in_progress",
                                     "currentPhase": "build"})
    # Mobile refuses an edit of a file another task's live agent holds.
    tools.ok("update_global_context", {"projectId": "mobile", "orchestratorContext": {
        "fileClaims": {"policy": "block", "ignore": []}}})
    for session_id, project_id, task_id, agent, _ in SESSIONS:
        tools.ok("start_session", {"sessionId": session_id, "projectId": project_id,
                                   "taskId": task_id, "agentId": agent,
                                   "projectDir": f"/work/{project_id}"})
        tools.ok("save_context_snapshot", {"taskId": task_id, "sessionId": session_id,
                                           "updates": {"currentPhase": f"{agent} at work"}})

    # Files: two shop tasks edit the cart (contested: warn policy, a file conflict), the
    # ui kit's agent holds a button the login screen's agent is then refused.
    tools.ok("claim_files", {"sessionId": "s-ada", "paths": ["src/checkout/cart.ts"]})
    tools.ok("claim_files", {"sessionId": "s-bo", "paths": ["src/checkout/cart.ts",
                                                           "src/coupons/apply.ts"]})
    tools.ok("claim_files", {"sessionId": "s-cy", "paths": ["billing/invoice_pdf.py"]})
    tools.ok("claim_files", {"sessionId": "s-jo", "paths": ["src/ui/Button.tsx"]})
    blocked = tools.ok("claim_files", {"sessionId": "s-ivy", "paths": ["src/ui/Button.tsx"]})
    assert blocked["blocked"] is True, blocked

    # Conflicts people must settle.
    tools.ok("report_conflict", {
        "taskAId": "shop-checkout", "taskBId": "shop-cart", "severity": "critical",
        "description": "Checkout and cart disagree on where the basket lives",
        "evidence": {"field": "currentPhase", "expectedValue": "design",
                     "actualValue": "build", "location": "docs/basket.md"}})
    tools.ok("report_conflict", {
        "taskAId": "billing-tax", "taskBId": "billing-invoices", "severity": "high",
        "description": "Invoices round tax per line, tax rates per total",
        "evidence": {"field": "currentPhase", "expectedValue": "per line",
                     "actualValue": "per total", "location": "billing/tax.py"}})

    # Task locks: the invoices agent holds its task; the refunds agent will crash holding its.
    tools.ok("acquire_task_lock", {"taskId": "billing-invoices", "sessionId": "s-cy",
                                   "ttlSeconds": 3600})
    tools.ok("acquire_task_lock", {"taskId": "billing-refunds", "sessionId": "s-hal",
                                   "ttlSeconds": 3600})

    # Pauses: one resets in an hour, one reset ten minutes ago and still waits.
    now = timezone.now()
    tools.ok("pause_session", {"sessionId": "s-eve", "reason": "usage_limit",
                               "resetsAt": (now + timedelta(hours=1)).isoformat()})
    tools.ok("pause_session", {"sessionId": "s-fay", "reason": "usage_limit",
                               "resetsAt": (now - timedelta(minutes=10)).isoformat()})
    tools.ok("end_session", {"sessionId": "s-gus"})

    # The refunds agent goes quiet past the crash threshold and the sweep finds it; the tax
    # agent is quiet for 70% of it: late, not crashed.
    age_heartbeat("s-hal", threshold_seconds() + 60)
    age_heartbeat("s-eve", threshold_seconds() * 2)  # a paused agent sends none: not judged
    age_heartbeat("s-fay", threshold_seconds() * 3)
    crashed = call_tool("detect_crashed_sessions", {}, AS_BEAT)
    assert "s-hal" in str(crashed), crashed
    age_heartbeat("s-di", threshold_seconds() * 0.7)
    return {session_id: state for session_id, _, _, _, state in SESSIONS}
