"""A team's day for the console's browser tests and screenshots: three projects, fourteen
tasks, eleven sessions of every state (live, late, overdue, paused, crashed, ended), file
claims with a contested file, a task lock, conflicts, and saves. Everything goes through
the tools (``tools.ok``), as agents would do it; only heartbeat ages are set in the table
(no waiting for minutes to pass).

Session ids are 60 characters, as Claude Code's are, so the pages must shorten them.
"""

from __future__ import annotations

import hashlib
from datetime import timedelta

from django.utils import timezone

from sessions.services import recovery
from tests.sessions.helpers import backdate

PROJECTS = (("shop", "Web shop"), ("api", "API server"), ("mobile", "Mobile app"))
TASKS = {
    "shop": (("checkout-flow", "Checkout flow rewrite", "in_progress"),
             ("cart-totals", "Cart totals and discounts", "in_progress"),
             ("search-facets", "Search facets", "in_progress"),
             ("payments-retry", "Payment retries with idempotency keys", "in_progress"),
             ("shop-footer", "Footer links", "completed"),
             ("shop-a11y", "Accessibility audit", "pending")),
    "api": (("rate-limits", "Per-token rate limits", "in_progress"),
            ("auth-refresh", "Refresh tokens", "in_progress"),
            ("openapi-docs", "OpenAPI examples", "pending"),
            ("api-metrics", "Request metrics", "in_progress")),
    "mobile": (("onboarding", "Onboarding screens", "in_progress"),
               ("push-notify", "Push notifications", "in_progress"),
               ("offline-sync", "Offline sync", "pending"),
               ("dark-mode", "Dark mode", "completed")),
}


def session_id(name: str) -> str:
    """A 60-character id like Claude Code's (a prefix and a hex digest)."""
    return f"sess_{name}_" + hashlib.sha256(name.encode()).hexdigest()[:54 - len(name)]


# (name, project, task, agent, state, heartbeat age in seconds)
SESSIONS = (
    ("opus-checkout", "shop", "checkout-flow", "claude-opus", "live", 20),
    ("codex-cart", "shop", "cart-totals", "codex", "late", 200),
    ("gemini-search", "shop", "search-facets", "gemini", "paused", 601),
    ("sonnet-payments", "shop", "payments-retry", "claude-sonnet", "crashed", 900),
    ("opus-footer", "shop", "shop-footer", "claude-opus", "ended", 4000),
    ("opus-rates", "api", "rate-limits", "claude-opus", "live", 35),
    ("codex-auth", "api", "auth-refresh", "codex", "overdue", 420),
    ("sonnet-docs", "api", "openapi-docs", "claude-sonnet", "ended", 7000),
    ("haiku-onboard", "mobile", "onboarding", "claude-haiku", "live", 5),
    ("codex-push", "mobile", "push-notify", "codex", "crashed", 1500),
    ("gemini-dark", "mobile", "dark-mode", "gemini", "ended", 9000),
)
CONTESTED = "src/checkout/pricing.ts"


def seed_team_day(tools) -> dict[str, str]:
    """Seed the day; answers {short name: session id}."""
    for project_id, name in PROJECTS:
        tools.ok("create_project", {"projectId": project_id, "name": name})
        for task_id, task_name, status in TASKS[project_id]:
            tools.ok("create_task", {"taskId": task_id, "name": task_name, "status": status,
                                     "projectId": project_id, "currentPhase": "build",
                                     "keyFiles": [f"src/{task_id}/index.ts"]})
    tools.ok("add_task_relationship", {"sourceTaskId": "cart-totals",
                                       "targetTaskId": "checkout-flow",
                                       "relationshipType": "blocks",
                                       "reason": "totals feed the checkout summary"})
    ids = {}
    for name, project, task, agent, _state, _age in SESSIONS:
        ids[name] = session_id(name)
        tools.ok("start_session", {"sessionId": ids[name], "taskId": task, "agentId": agent,
                                   "projectId": project, "projectDir": f"/work/{project}"})
        tools.ok("save_context_snapshot", {
            "taskId": task, "sessionId": ids[name], "changeSummary": f"{agent}: first pass",
            "updates": {"immediateContext": {"workingOn": f"{task} step one",
                                             "nextStep": "tests"}}})
    tools.ok("claim_files", {"sessionId": ids["opus-checkout"],
                             "paths": [CONTESTED, "src/checkout/summary.tsx"]})
    tools.call("claim_files", {"sessionId": ids["codex-cart"], "paths": [CONTESTED]})
    tools.ok("claim_files", {"sessionId": ids["opus-rates"], "paths": ["api/limits.py"]})
    tools.ok("claim_files", {"sessionId": ids["haiku-onboard"],
                             "paths": ["app/screens/Welcome.tsx"]})
    tools.ok("acquire_task_lock", {"taskId": "checkout-flow",
                                   "sessionId": ids["opus-checkout"], "ttlSeconds": 3600})
    tools.ok("report_conflict", {
        "taskAId": "checkout-flow", "taskBId": "cart-totals", "severity": "critical",
        "description": "Checkout and cart disagree on where discounts are applied",
        "evidence": {"field": "technicalDecisions", "expectedValue": ["discounts in cart"],
                     "actualValue": {"discounts": "at checkout", "rounding": "half-even"},
                     "location": CONTESTED}})
    tools.ok("report_conflict", {
        "taskAId": "rate-limits", "taskBId": "auth-refresh", "severity": "medium",
        "description": "Token refresh is not counted against the rate limit",
        "evidence": {"field": "currentPhase", "expectedValue": "build",
                     "actualValue": "design", "location": "api/limits.py"}})
    for name, _project, _task, _agent, state, age in SESSIONS:
        if state == "ended":
            tools.ok("end_session", {"sessionId": ids[name], "summary": "done for the day"})
        elif state == "paused":
            tools.ok("pause_session", {
                "sessionId": ids[name], "reason": "usage_limit",
                "resetsAt": (timezone.now() + timedelta(hours=2)).isoformat()})
        elif state == "crashed":
            recovery.mark_crashed(ids[name])
        backdate(ids[name], age / 60)
    return ids
