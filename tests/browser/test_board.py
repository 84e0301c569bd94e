"""The console's home page on a team's day (tests.browser.board_day.py), in a real browser:
what a person sees on the agent board and in the "needs you" queue.

- the paused agent is shown paused, the crashed one is in the queue and the live ones are
  not; the counts above the board equal its rows, its JSON and the overview's JSON;
- the title and the tab's icon carry the queue's count; the project filter and the sort
  work without a reload, and new state arrives without one;
- every queue action changes what the page says and is in the audit trail under the
  operator's name; "Cancel" changes nothing;
- the time from a crash being detected to its row in the queue, and the page's weight and
  load time, are printed (measured, never asserted: speed goes to bench/);
- screenshots of the board at 1440 and 1280 px (``CONSOLE_DOCS_SCREENSHOTS=1`` writes them
  to docs/console/ as well, for the documentation).
"""

from __future__ import annotations

import json
import os
import shutil
import time

import pytest
from django.contrib.admin.models import LogEntry

from conflicts.models import ContextConflict
from foundation.core.tools import call_tool
from sessions.models import ActiveSession
from tests.browser.board_day import AS_BEAT, age_heartbeat, seed, threshold_seconds
from tests.browser.conftest import ROOT

pytestmark = pytest.mark.slow

DOCS = ROOT / "docs" / "console"


@pytest.fixture
def fast_board(monkeypatch):
    # The page re-reads the board every REFRESH_SECONDS; one second keeps tests short.
    monkeypatch.setattr("console.board_views.REFRESH_SECONDS", 1)
    monkeypatch.setattr("console.views.REFRESH_SECONDS", 1)


@pytest.fixture
def day(tools):
    return seed(tools)


def rows(page) -> dict[str, str]:
    """{session id: state} of the board's rows as shown."""
    return page.evaluate("""() => Object.fromEntries(
        [...document.querySelectorAll('#board-rows tr')].map(
            tr => [tr.dataset.session, tr.dataset.state]))""")


def queue(page) -> list[dict[str, str]]:
    return page.evaluate("""() => [...document.querySelectorAll('#needs-you-items > li')].map(
        li => ({key: li.dataset.key, kind: li.dataset.kind,
                text: li.innerText}))""")


def fetch_json(page, path: str) -> dict:
    """A console JSON feed as the page's own session reads it (cookie, no token)."""
    return page.evaluate("path => fetch(path, {credentials: 'same-origin'}).then(r => r.json())",
                         path)


def shown_counts(page) -> dict[str, int]:
    return page.evaluate("""() => Object.fromEntries(
        [...document.querySelectorAll('#board-counts .state-count')].map(
            s => [s.id.replace('count-', ''), Number(s.dataset.count)]))""")


def wait_refreshed(page) -> None:
    """Until the page has re-read the board once more."""
    before = int(page.get_attribute("#agent-board", "data-refreshes"))
    page.wait_for_function(
        f"Number(document.getElementById('agent-board').dataset.refreshes) > {before}")


def test_a_person_sees_each_agents_true_state_and_the_counts_add_up(console, fast_board, day,
                                                                     tools):
    page = console.open("/admin/")
    page.wait_for_selector("#board-rows tr")
    assert rows(page) == day

    paused = page.locator("#board-rows tr[data-session='s-eve']")
    assert paused.locator(".state-word").inner_text().lower() == "paused"
    assert "expects no heartbeats" in paused.inner_text()
    assert "not judged" in paused.locator("td.hb").inner_text()
    late = page.locator("#board-rows tr[data-session='s-di']")
    assert "hb-late" in late.locator("td.hb").get_attribute("class")
    live = page.locator("#board-rows tr[data-session='s-ada']")
    assert live.locator(".state-word").inner_text().lower() == "live"
    assert "Checkout flow" in live.inner_text() and "claude-ada" in live.inner_text()
    assert "src/checkout/cart.ts" in live.locator("td.board-now").inner_text()

    items = queue(page)
    crashed = [i for i in items if i["kind"] == "crashed"]
    assert len(crashed) == 1 and "claude-hal" in crashed[0]["text"]
    assert "Refund workflow" in crashed[0]["text"]
    live_agents = {"claude-ada", "codex-bo", "claude-cy", "claude-jo", "codex-ivy"}
    assert not [a for a in live_agents for i in crashed if a in i["text"]]
    kinds = {i["kind"] for i in items}
    assert kinds == {"crashed", "conflict", "blocked", "lock", "contested", "paused"}

    # The counts over the board are its rows; they agree with both JSON feeds.
    counts = shown_counts(page)
    by_state = {state: list(rows(page).values()).count(state) for state in counts}
    assert counts == by_state
    board = fetch_json(page, "/admin/board.json")
    overview = fetch_json(page, "/admin/overview.json")
    assert counts == board["counts"]
    assert counts["crashed"] == overview["recoveryCount"]
    live = sum(counts[state] for state in ("live", "late", "overdue", "paused"))
    assert live == overview["activeSessionCount"]
    shown_conflicts = len([i for i in items if i["kind"] == "conflict"])
    assert shown_conflicts == overview["conflicts"]["unresolvedTotal"]
    assert console.text("#needs-you-count") == str(len(items)) == str(board["needsYouCount"])
    assert page.title().startswith(f"({len(items)}) ")
    assert page.get_attribute("#board-favicon", "data-count") == str(len(items))
    assert page.get_attribute("#board-favicon", "href").startswith("data:image/svg+xml,")
    console.screenshot("board")

    # The project filter: only mobile's agents and items; the counts follow.
    page.select_option("#board-project", "mobile")
    assert set(rows(page)) == {"s-jo", "s-ivy", "s-eve", "s-fay"}
    assert sum(shown_counts(page).values()) == 4
    assert all("Mobile app" in i["text"] for i in queue(page))
    assert console.text("#needs-you-count") == str(len(queue(page)))
    wait_refreshed(page)  # the filter holds across a refresh
    assert set(rows(page)) == {"s-jo", "s-ivy", "s-eve", "s-fay"}
    page.select_option("#board-project", "")

    # Sorting: by heartbeat age, youngest first, then oldest first.
    page.click("#board-table button[data-sort='heartbeat']")
    ages = page.eval_on_selector_all("#board-rows td.hb", "cells => cells.map("
                                     "c => c.dataset.age === '' ? Infinity : Number(c.dataset.age))")
    assert ages == sorted(ages)
    page.click("#board-table button[data-sort='heartbeat']")
    ages = page.eval_on_selector_all("#board-rows td.hb", "cells => cells.map("
                                     "c => c.dataset.age === '' ? Infinity : Number(c.dataset.age))")
    assert ages == sorted(ages, reverse=True)

    # New state arrives without a reload: an agent starts, another goes quiet.
    page.evaluate("window.__notReloaded = true")
    tools.ok("start_session", {"sessionId": "s-kim", "projectId": "shop",
                               "taskId": "shop-reviews", "agentId": "claude-kim",
                               "agentKind": "claude-code"})
    tools.ok("start_session", {"sessionId": "s-cx", "projectId": "shop",
                               "agentId": "codex", "agentKind": "codex"})
    age_heartbeat("s-bo", threshold_seconds() * 0.8)
    page.wait_for_function("document.querySelector(\"#board-rows tr[data-session='s-bo']\")"
                           "?.dataset.state === 'late' && document.querySelector("
                           "\"#board-rows tr[data-session='s-kim']\")?.dataset.state === 'live'"
                           " && document.querySelector(\"#board-rows tr[data-session='s-cx']\")")
    assert page.evaluate("window.__notReloaded") is True
    # The agent's kind before its id, once when they are the same ("codex", not "codex · codex").
    agent = "#board-rows tr[data-session='{}'] td.board-agent a"
    assert console.text(agent.format("s-kim")) == "claude-code · claude-kim"
    assert console.text(agent.format("s-cx")) == "codex"
    assert console.text("#count-live").startswith("●")


def act_on(page, key: str, action: str, *, confirm: bool = True) -> None:
    item = page.locator(f"#needs-you-items > li[data-key='{key}']")
    item.locator(f"button[data-action='{action}']").click()
    if confirm:
        item.locator("button.queue-confirm").click()
        page.wait_for_selector(f"#needs-you-items > li[data-key='{key}']", state="detached")


def item_key(page, kind: str, text: str = "") -> str:
    return next(i["key"] for i in queue(page) if i["kind"] == kind and text in i["text"])


def test_every_queue_action_changes_what_the_page_says_and_is_audited(console, fast_board,
                                                                       day):
    page = console.open("/admin/")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"],
                                   origin=console.base_url)
    page.wait_for_selector("#needs-you-items > li")
    start = len(queue(page))

    # Copy the crashed agent's resume prompt: nothing changes but the button.
    crashed = item_key(page, "crashed")
    button = page.locator(f"li[data-key='{crashed}'] button[data-action='copy_prompt']")
    button.click()
    page.wait_for_function("b => b.dataset.copied", arg=button.element_handle())
    assert button.inner_text() == "Copied ✓"
    copied = page.evaluate("navigator.clipboard.readText()")
    assert "Refund workflow" in copied or "billing-refunds" in copied

    # Cancel changes nothing.
    item = page.locator(f"li[data-key='{crashed}']")
    item.locator("button[data-action='mark_recovered']").click()
    assert "dealt with" in item.locator(".queue-question").inner_text()
    item.locator("button.queue-cancel").click()
    wait_refreshed(page)
    assert ActiveSession.objects.get(session_id="s-hal").recovery_needed is True
    assert not LogEntry.objects.exists()

    done = []
    act_on(page, crashed, "mark_recovered")
    done.append("Marked s-hal recovered")
    assert rows(page)["s-hal"] == "recovered"
    critical = item_key(page, "conflict", "critical")
    act_on(page, critical, "use_a")
    done.append("resolved (use_a)")
    high = item_key(page, "conflict", "high")
    act_on(page, high, "ignore")
    done.append("ignored (ignore)")
    file_conflict = item_key(page, "conflict", "file conflict")
    item = page.locator(f"li[data-key='{file_conflict}']")
    item.locator("button[data-action='merge']").click()
    value = json.loads(item.locator("textarea.merge-value").input_value())
    assert set(value) == {"shop-checkout", "shop-coupons"}
    item.locator("button.queue-confirm").click()
    page.wait_for_selector(f"li[data-key='{file_conflict}']", state="detached")
    done.append("resolved (merge)")
    act_on(page, item_key(page, "blocked"), "release_claim")
    done.append("Released src/ui/Button.tsx")
    act_on(page, item_key(page, "lock"), "release_lock")
    done.append("Lock released")
    contested = item_key(page, "contested")
    page.locator(f"li[data-key='{contested}'] button[data-action='release_claim']").first.click()
    page.locator(f"li[data-key='{contested}'] button.queue-confirm").click()
    page.wait_for_selector(f"li[data-key='{contested}']", state="detached")
    done.append("Released src/checkout/cart.ts")
    act_on(page, item_key(page, "paused"), "resume")
    done.append("Resumed")

    said = console.text("#needs-you-done")
    for words in done[-5:]:  # the page keeps the last five
        assert words in said, (words, said)
    assert queue(page) == [] and console.text("#needs-you-count") == "0"
    assert "Nothing needs you" in console.text("#needs-you")
    assert not page.title().startswith("(")
    assert page.get_attribute("#board-favicon", "data-count") == "0"
    assert start == len(done)
    console.screenshot("queue-emptied")

    # The audit trail: one entry per action, under the operator's name.
    entries = list(LogEntry.objects.order_by("action_time"))
    assert [e.user.get_username() for e in entries] == ["operator"] * len(done)
    assert all(e.change_message.startswith("Needs-you queue: ") for e in entries)
    assert ContextConflict.objects.filter(resolved_by="operator").count() == 3
    page = console.open("/admin/")
    recent = console.text("#recent-actions-module")
    assert "s-hal" in recent and "src/ui/Button.tsx" in recent


def test_a_crash_reaches_the_queue_without_a_reload(console, day):
    """At the page's own refresh period (REFRESH_SECONDS, not shortened here)."""
    page = console.open("/admin/")
    page.wait_for_selector("#board-rows tr")
    assert rows(page)["s-ada"] == "live"
    key = f"crashed:{ActiveSession.objects.get(session_id='s-ada').pk}"
    age_heartbeat("s-ada", threshold_seconds() + 30)
    call_tool("detect_crashed_sessions", {}, AS_BEAT)
    detected = time.monotonic()
    page.wait_for_selector(f"#needs-you-items > li[data-key='{key}']")
    seen = time.monotonic() - detected
    assert rows(page)["s-ada"] == "crashed"
    print(f"\nMEASURED crash detected -> row in the queue: {seen:.2f} s "
          f"(page refresh period {page.get_attribute('#agent-board', 'data-refresh-seconds')} s)")


def test_page_weight_and_load_time(console, fast_board, day):
    page = console.open("/admin/")
    page.wait_for_selector("#board-rows tr")
    figures = page.evaluate("""() => {
        const nav = performance.getEntriesByType('navigation')[0];
        const resources = performance.getEntriesByType('resource');
        const mark = performance.getEntriesByName('board-rendered')[0];
        return {html: nav.transferSize, decodedHtml: nav.decodedBodySize,
                resources: resources.reduce((n, r) => n + r.transferSize, 0),
                resourcesDecoded: resources.reduce((n, r) => n + r.decodedBodySize, 0),
                count: resources.length,
                external: resources.filter(r => !r.name.startsWith(location.origin)).length,
                load: nav.loadEventEnd - nav.startTime,
                rendered: mark ? mark.startTime : null};
    }""")
    feed = page.evaluate("""async () => {
        const times = [];
        let size = 0;
        for (let i = 0; i < 5; i++) {
            const started = performance.now();
            size = (await (await fetch('/admin/board.json')).text()).length;
            times.push(performance.now() - started);
        }
        times.sort((a, b) => a - b);
        return {size, median: times[2]};
    }""")
    assert figures["external"] == 0  # nothing from the internet
    print(f"\nMEASURED home page: HTML {figures['decodedHtml'] / 1024:.1f} KiB, "
          f"{figures['count']} resources {figures['resourcesDecoded'] / 1024:.1f} KiB "
          f"(transferred {(figures['html'] + figures['resources']) / 1024:.1f} KiB), "
          f"board.json {feed['size'] / 1024:.1f} KiB in {feed['median']:.0f} ms (median of 5); "
          f"load event {figures['load']:.0f} ms, "
          f"board rendered {figures['rendered']:.0f} ms after navigation start")


@pytest.mark.parametrize("width", [1440, 1280])
def test_board_screenshots(console, day, width):
    """The board as a person sees it; rerun with CONSOLE_DOCS_SCREENSHOTS=1 to refresh
    docs/console/board-<width>.png."""
    page = console.page
    page.set_viewport_size({"width": width, "height": 900})
    console.open("/admin/")
    page.wait_for_selector("#board-rows tr")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{overflow} px wider than the window at {width} px"
    bottom = page.evaluate("Math.ceil(document.getElementById('agent-board')"
                           ".getBoundingClientRect().bottom + window.scrollY)")
    shot = console.screenshot(f"board-{width}")
    page.screenshot(path=str(shot), full_page=True,
                    clip={"x": 0, "y": 0, "width": width, "height": bottom + 8})
    if os.environ.get("CONSOLE_DOCS_SCREENSHOTS") == "1":
        DOCS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, DOCS / f"board-{width}.png")
