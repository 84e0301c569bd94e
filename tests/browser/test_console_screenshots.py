"""Screenshots of the console pages issue 38 changed, over a team's day, at 1440 and 1280 px:
the sessions list, a crashed session, a task page with its live panel, the claims and
locks page, a conflict page and the projects page.

Rerun to refresh the committed copies in docs/console/ (shown in docs/console-pages.md):

    UPDATE_CONSOLE_SCREENSHOTS=1 make test-slow PYTEST_ARGS="tests/browser/test_console_screenshots.py"

Without the variable they go to .artifacts/console-pages/ (gitignored), so an ordinary test
run never changes the repository. The test also checks each page answered 200 and fits the
window (no horizontal scrolling), so a screenshot is never of an error page.
"""

from __future__ import annotations

import json
import os

import pytest

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from sessions.models import ActiveSession
from tests.browser.conftest import ROOT
from tests.browser.team_day import seed_team_day

pytestmark = pytest.mark.slow

WIDTHS = (1440, 1280)


def pages(day: dict[str, str]) -> list[tuple[str, str]]:
    crashed = ActiveSession.objects.get(session_id=day["sonnet-payments"])
    task = TaskContext.objects.get(task_id="checkout-flow")
    conflict = ContextConflict.objects.filter(severity="critical").first()
    return [
        ("sessions", "/admin/agent_sessions/activesession/"),
        ("crashed-session", f"/admin/agent_sessions/activesession/{crashed.pk}/change/"),
        ("task-live-panel", f"/admin/contexts/taskcontext/{task.pk}/change/"),
        ("claims-and-locks", "/admin/claims-and-locks/"),
        ("conflict", f"/admin/conflicts/contextconflict/{conflict.pk}/change/"),
        ("projects", "/admin/projects/"),
    ]


def test_screenshots_of_the_changed_pages(console, tools):
    day = seed_team_day(tools)
    folder = ROOT / ("docs/console" if os.environ.get("UPDATE_CONSOLE_SCREENSHOTS")
                     else ".artifacts/console-pages")
    folder.mkdir(parents=True, exist_ok=True)
    page = console.page
    weights: dict[str, dict[str, float]] = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        for label, path in pages(day):
            response = page.goto(console.base_url + path)
            assert response is not None and response.status == 200, label
            page.wait_for_load_state("load")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"), \
                (label, width)
            page.screenshot(path=str(folder / f"{label}-{width}.png"), full_page=True)
            # What the page weighs and how long it took (recorded for the docs, not judged:
            # speed belongs to bench/).
            weights[f"{label}-{width}"] = page.evaluate(WEIGHT)
    (folder / "console-pages-weights.json").write_text(json.dumps(weights, indent=1) + "\n")


WEIGHT = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const resources = performance.getEntriesByType('resource');
  return {htmlBytes: nav.decodedBodySize,
          totalBytes: nav.decodedBodySize + resources.reduce((n, r) => n + r.decodedBodySize, 0),
          requests: 1 + resources.length,
          loadMs: Math.round(nav.loadEventEnd - nav.startTime)};
}"""
