"""Issue 38's eight defects of the console pages, each driven in Chromium over a team's day
(tests/browser/team_day.py) and asserted as a person reads the page: the paused agent is
shown paused, the crashed one needs recovery and the live ones do not, counts equal the
rows under them, names come before ids, one time format, and the actions land in the
audit trail with the operator's name."""

from __future__ import annotations

import re

import pytest
from django.contrib.admin.models import LogEntry

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from sessions.models import ActiveSession
from tests.browser.team_day import CONTESTED, seed_team_day

pytestmark = pytest.mark.slow

SESSIONS = "/admin/agent_sessions/activesession/"
ABSOLUTE = re.compile(r"^\d{4}-\d\d-\d\d ([01]\d|2[0-3]):[0-5]\d:[0-5]\d\b")


@pytest.fixture(autouse=True)
def fast_overview_refresh(monkeypatch):
    monkeypatch.setattr("console.views.REFRESH_SECONDS", 1)


@pytest.fixture
def day(tools):
    return seed_team_day(tools)


def session_row(page, session_id: str):
    return page.locator("#result_list tbody tr", has=page.locator(
        f".short-id code[title='{session_id}']"))


def task_page(console, task_id: str):
    return console.open(f"/admin/contexts/taskcontext/"
                        f"{TaskContext.objects.get(task_id=task_id).pk}/change/")


def test_1_a_paused_agent_is_shown_paused_and_heartbeats_are_judged(console, day):
    page = console.open(SESSIONS)
    states = {name: session_row(page, day[name]).locator("td.field-state").inner_text().strip()
              for name in ("gemini-search", "opus-checkout", "codex-cart", "codex-auth",
                           "sonnet-payments", "opus-footer")}
    assert states == {"gemini-search": "paused", "opus-checkout": "live", "codex-cart": "late",
                      "codex-auth": "overdue", "sonnet-payments": "crashed",
                      "opus-footer": "ended"}
    # The paused agent's 601 s old heartbeat is not judged; a live one past the crash
    # threshold (5 min) is shown red, one past half of it amber.
    heartbeat = {name: session_row(page, day[name]).locator("td.field-heartbeat .hb")
                 .get_attribute("class") for name in ("gemini-search", "codex-auth",
                                                      "codex-cart", "opus-checkout")}
    assert heartbeat == {"gemini-search": "hb hb-paused", "codex-auth": "hb hb-overdue",
                         "codex-cart": "hb hb-late", "opus-checkout": "hb hb-fresh"}
    console.screenshot("sessions-states")
    # The overview says the same.
    page = console.open("/admin/")
    row = page.locator(f"#active-sessions tr[data-session='{day['gemini-search']}']")
    assert row.locator("td.state").inner_text().strip() == "paused"
    assert "no heartbeat expected" in row.locator(".mark").get_attribute("title")


def test_2_only_the_crashed_need_recovery_and_live_ones_show_no_recovery_prompt(console, day):
    page = console.open(SESSIONS)
    recovery = {name: session_row(page, day[name]).locator("td.field-recovery").inner_text()
                .strip() for name in ("opus-checkout", "sonnet-payments", "gemini-search")}
    assert recovery["opus-checkout"] == "—" and recovery["gemini-search"] == "—"
    assert recovery["sonnet-payments"].startswith("needs recovery")
    # No red-cross / green-tick icons: they read inverted.
    assert page.locator("#result_list img[src*='icon-']").count() == 0
    live = ActiveSession.objects.get(session_id=day["opus-checkout"])
    page = console.open(f"{SESSIONS}{live.pk}/change/")
    assert "Recovery Required" not in page.inner_text("#content")
    assert "No recovery needed" in console.text("#no-resume-prompt")
    assert page.locator("#mark-recovered").count() == 0


def test_3_a_crashed_session_page_copies_the_prompt_and_marks_it_recovered(console, day):
    crashed = ActiveSession.objects.get(session_id=day["sonnet-payments"])
    page = console.open(f"{SESSIONS}{crashed.pk}/change/")
    assert console.text("#session-state .mark") == "crashed"
    console.screenshot("crashed-session")
    page.click("#copy-resume-prompt")
    # The label changes when the clipboard's promise settles, after the click returns, and
    # goes back 1.5 s later: wait for it at once rather than read it once.
    page.wait_for_function(
        "() => document.querySelector('#copy-resume-prompt').textContent.trim() === 'Copied'")
    copied = page.evaluate("window.__lastCopied")
    assert copied.startswith("## Recovery Required") and "payments-retry" in copied
    page.click("#mark-recovered")
    page.wait_for_selector("text=Marked recovered")
    assert console.text("#session-state .mark") == "recovered"
    assert page.locator("#mark-recovered").count() == 0
    crashed.refresh_from_db()
    assert (crashed.status, crashed.recovery_needed) == ("recovered", False)
    entry = LogEntry.objects.get(object_id=str(crashed.pk))
    assert entry.user.username == "operator" and "check_recovery" in entry.change_message
    # The admin's history page of the session shows it, with the operator's name.
    page = console.open(f"{SESSIONS}{crashed.pk}/history/")
    assert "operator" in page.inner_text("#change-history")


def test_4_contested_files_link_to_the_claims_page_and_counts_equal_rows(console, day):
    page = console.open("/admin/")
    rows = page.locator("#contested-files tbody tr")
    assert rows.count() >= 1
    assert console.text("#contested-listed-count") == str(rows.count())
    rows.first.locator("a").first.click()
    page.wait_for_selector("#claims-table")
    assert page.url.endswith("/admin/claims-and-locks/?path=src%2Fcheckout%2Fpricing.ts")
    claims = page.locator("#claims-table tbody tr")
    assert console.text("#claims-count") == str(claims.count()) == "2"
    holders = claims.all_inner_texts()
    assert any("claude-opus" in h and "Checkout flow rewrite" in h for h in holders)
    assert any("codex" in h and "Cart totals and discounts" in h for h in holders)
    assert all("contested" in h for h in holders)
    console.screenshot("claims-of-a-file")
    # Every claim and lock: the lock on the checkout says who holds it since when.
    page = console.open("/admin/claims-and-locks/")
    assert console.text("#claims-count") == str(page.locator("#claims-table tbody tr").count())
    lock = page.locator("#locks-table tbody tr", has_text="Checkout flow rewrite")
    assert "claude-opus" in lock.inner_text() and "held" in lock.inner_text()
    assert ABSOLUTE.match(lock.locator("time.when").first.get_attribute("title"))
    console.screenshot("claims-and-locks")
    # The conflict page links its tasks and the shared file's holders.
    page = console.open("/admin/conflicts/contextconflict/?severity__exact=critical")
    page.click("#result_list a:text('spec_contradiction')")
    page.click("#conflict-tasks a:text('its files and locks') >> nth=0")
    page.wait_for_selector("#claims-table")
    assert "task=checkout-flow" in page.url


def test_5_numbers_agree_with_one_project_chosen(console, day):
    page = console.open("/admin/")
    with page.expect_navigation():
        page.select_option("#project-switcher-select", "shop")
    orphaned_on_overview = {a.inner_text().strip()
                            for a in page.locator("#orphaned-tasks a").all()}
    assert orphaned_on_overview == {"Payment retries with idempotency keys"}
    page = console.open("/admin/contexts/taskcontext/?orphaned=yes")
    marked = page.locator("#result_list td.field-orphaned", has_text="orphaned")
    assert marked.count() == 1
    page = console.open("/admin/contexts/taskcontext/")
    row = page.locator("#result_list tbody tr", has_text="Payment retries with idempotency")
    assert "orphaned" in row.locator("td.field-orphaned").inner_text()
    # The sessions list's count says "sessions", split by state, summing to the rows.
    page = console.open(SESSIONS)
    count = console.text("#session-count")
    assert "active session" not in count
    rows = page.locator("#result_list tbody tr").count()
    assert count.startswith(f"{rows} sessions")
    states = {el.get_attribute("data-state"): int(el.inner_text().split()[0])
              for el in page.locator("#session-count .state-count").all()}
    assert states == {"live": 1, "late": 1, "paused": 1, "crashed": 1, "ended": 1}
    assert sum(states.values()) == rows


def test_6_a_task_page_says_who_works_on_it(console, day):
    page = console.open("/admin/contexts/taskcontext/")
    row = page.locator("#result_list tbody tr", has_text="Checkout flow rewrite")
    assert row.locator("td.field-active").inner_text().strip() == "1 session"
    page = task_page(console, "checkout-flow")
    live = console.text("#task-live-sessions")
    assert "claude-opus" in live and "live" in live and CONTESTED.replace("/", "") in \
        live.replace("/", "").replace("\n", "")
    assert "blocked" in console.text("#task-readiness")  # cart-totals blocks it
    assert "Cart totals and discounts" in console.text("#task-readiness")
    assert page.locator("#task-last-versions tbody tr").count() >= 1
    last_session = page.locator(".field-last_session .readonly")
    assert last_session.inner_text().strip() not in ("-", "—", "")
    console.screenshot("task-live-panel")
    page.click("#version-history tr:has-text('v1') a:text('roll back to this version')")
    page.wait_for_selector("#rollback-changes")
    warning = console.text("#rollback-live-warning")
    assert "1 live agent on this task now" in warning and "claude-opus" in warning
    # The panel's "its files and locks" opens the claims page of the task.
    page = task_page(console, "checkout-flow")
    page.click("#task-claims-link")
    page.wait_for_selector("#locks-table")
    assert "Checkout flow rewrite" in console.text("#locks-table")


def test_7_names_before_ids_shortened_and_copyable(console, day):
    page = console.open(SESSIONS)
    row = session_row(page, day["opus-checkout"])
    assert row.locator("td.field-agent").inner_text().strip() == "claude-opus"
    assert "Checkout flow rewrite" in row.locator("td.field-task").inner_text()
    shown = row.locator("th.field-session .short-id code").inner_text()
    assert len(day["opus-checkout"]) == 60 and len(shown) < 20 and "…" in shown
    row.locator("th.field-session .copy-id").click()
    assert page.evaluate("window.__lastCopied") == day["opus-checkout"]
    page = console.open("/admin/")
    live = page.locator(f"#active-sessions tr[data-session='{day['opus-rates']}']")
    assert "Per-token rate limits" in live.inner_text()
    assert day["opus-rates"] not in live.inner_text()


def result_links(page) -> list[str]:
    return [t.strip() for t in page.locator("#result_list a").all_inner_texts()]


def assert_no_long_id_shown(page, day) -> None:
    """What a person reads in the list: no session id whole (only its short form), in a
    link or anywhere else in the table (the whole id is in hover titles only)."""
    text = page.inner_text("#result_list")
    assert not any(session in text for session in day.values())
    assert all(len(link) < 40 for link in result_links(page)), result_links(page)


def test_7_conflicts_list_names_its_tasks(console, day):
    page = console.open("/admin/conflicts/contextconflict/?severity__exact=critical")
    row = page.locator("#result_list tbody tr", has_text="spec_contradiction")
    assert row.locator("td.field-tasks .task-a .label").inner_text().strip() == \
        "Checkout flow rewrite"
    assert row.locator("td.field-tasks .task-b .label").inner_text().strip() == \
        "Cart totals and discounts"
    assert row.locator("td.field-tasks .task-a .short-id code").get_attribute("title") == \
        "checkout-flow"
    assert ABSOLUTE.match(row.locator("td.field-detected time.when").get_attribute("title"))
    assert_no_long_id_shown(page, day)
    # The sidebar filter offers tasks by name too.
    assert page.locator("#changelist-filter a", has_text="Checkout flow rewrite").count() == 1
    console.screenshot("conflicts-list")
    row.locator("td.field-tasks .task-a .label a").click()
    page.wait_for_selector("#task-live-sessions")
    assert "Checkout flow rewrite" in page.inner_text("#content")


def test_7_versions_list_names_the_task_and_the_agent(console, day):
    page = console.open(f"/admin/contexts/contextversion/?q={day['opus-checkout']}")
    rows = page.locator("#result_list tbody tr")
    assert rows.count() == 1
    row = rows.first
    assert row.locator("td.field-task .label").inner_text().strip() == "Checkout flow rewrite"
    assert row.locator("td.field-saved_by .label").inner_text().strip() == "claude-opus"
    shown = row.locator("td.field-saved_by .short-id code")
    assert shown.get_attribute("title") == day["opus-checkout"]
    assert len(shown.inner_text()) < 20 and "…" in shown.inner_text()
    row.locator("td.field-saved_by .copy-id").click()
    assert page.evaluate("window.__lastCopied") == day["opus-checkout"]
    assert ABSOLUTE.match(row.locator("td.field-created time.when").get_attribute("title"))
    assert re.fullmatch(r"v\d+", row.locator("th.field-version_label a").inner_text().strip())
    assert_no_long_id_shown(page, day)
    console.screenshot("versions-list")


def test_7_handoffs_list_names_the_agents(console, day):
    page = console.open("/admin/agent_sessions/sessionhandoff/")
    row = session_row(page, day["opus-footer"])
    assert row.count() == 1
    assert row.locator("th.field-note a").inner_text().strip() == "done for the day"
    assert row.locator("td.field-left_by .label").inner_text().strip() == "claude-opus"
    assert row.locator("td.field-project").inner_text().strip() == "Web shop"
    assert ABSOLUTE.match(row.locator("td.field-created time.when").get_attribute("title"))
    assert row.locator("td.field-taken_by").inner_text().strip() == "—"
    assert_no_long_id_shown(page, day)
    console.screenshot("handoffs-list")


def test_7_the_sidebar_and_breadcrumbs_say_sessions(console, day):
    page = console.open("/admin/agent_sessions/sessionhandoff/")
    link = page.locator(f"#nav-sidebar a[href$='{SESSIONS}']")
    assert link.inner_text().strip() == "Sessions"
    assert "Active sessions" not in page.inner_text("#nav-sidebar")
    page = console.open(SESSIONS)
    crumbs = page.inner_text(".breadcrumbs")
    assert crumbs.strip().endswith("Sessions") and "Active" not in crumbs
    page = console.open(f"{SESSIONS}{ActiveSession.objects.get(session_id=day['opus-checkout']).pk}"
                        f"/change/")
    assert "Active" not in page.inner_text(".breadcrumbs")


def test_8_readable_one_time_format_formatted_json_product_name(console, day):
    page = console.open(SESSIONS)
    assert "Django" not in page.title() and "Django administration" not in page.content()
    assert console.text("#site-name") == "Session Orchestrator"
    titles = [t.get_attribute("title") for t in page.locator("time.when").all()]
    assert titles and all(ABSOLUTE.match(t) for t in titles), titles[:3]
    assert not any(re.search(r"\b[AP]\.?M\.?\b|a\.m\.|p\.m\.", t) for t in titles)
    # No mid-word breaks: headings and state marks never break inside a word.
    assert page.evaluate("""() => [...document.querySelectorAll(
        '#result_list th, #result_list td.field-agent, .mark, time.when')]
        .every(el => getComputedStyle(el).overflowWrap !== 'anywhere')""")
    # The banner's URL and "View site" lead to the console, not a bare 404.
    response = page.goto(console.base_url + "/")
    assert response.status == 200 and page.url.endswith("/admin/")
    page.click("#user-tools a:text('View site')")
    assert page.url.endswith("/admin/") and page.locator("#content").count() == 1
    # JSON on the diff and rollback pages: indented, never Python's dict text.
    console.open("/admin/conflicts/contextconflict/?severity__exact=critical")
    page.click("#result_list a:text('spec_contradiction')")
    assert "{'" not in page.inner_text("#content")
    task = TaskContext.objects.get(task_id="checkout-flow")
    page = console.open(f"/admin/contexts/taskcontext/{task.pk}/change/?diff=1")
    context = page.locator(".field-immediate_context_shown pre.json")
    assert context.inner_text().startswith('{\n  "')  # indented, one key a line
    diff = page.locator("#version-diff")
    assert diff.locator("pre.json").count() >= 1 and "{'" not in diff.inner_text()
    page = console.open(f"/admin/contexts/taskcontext/{task.pk}/rollback/?type=version&version=1")
    changes = page.locator("#rollback-changes")
    assert changes.locator("pre.json").count() >= 1 and "{'" not in changes.inner_text()
    # Graph labels at least 11 px on screen once the graph is fitted.
    page = console.open("/admin/graph/taskrelationship/task-graph/")
    page.wait_for_function("window.taskGraph && window.taskGraph.nodes().length > 0")
    page.wait_for_timeout(0)
    size = page.evaluate("parseFloat(window.taskGraph.nodes()[0].renderedStyle('font-size'))")
    assert size >= 11, size


def test_projects_page_counts_each_project(console, day):
    page = console.open("/admin/projects/")
    shop = page.locator("#project-shop")
    cells = {name: shop.locator(f"td.{name}").inner_text().strip()
             for name in ("tasks", "live", "paused", "crashed", "orphaned", "conflicts")}
    # The contradiction reported, and the file conflict the contested claim recorded.
    unresolved = ContextConflict.objects.filter(project_id="shop",
                                                resolution_status="unresolved").count()
    assert unresolved == 2
    assert cells == {"tasks": "5 / 6", "live": "2", "paused": "1", "crashed": "1",
                     "orphaned": "1", "conflicts": str(unresolved)}
    console.screenshot("projects")
    with page.expect_navigation():
        shop.locator("button").click()
    assert page.input_value("#project-switcher-select") == "shop"
