"""Browser tests: Debian's chromium driven by Playwright against the live server.

Chromium comes from apt (``make browser``, run by ``make test-slow``), never from
``playwright install``; a missing binary fails the run. Every test gets a fresh profile
(user-data-dir) and a logged-in admin; screenshots of each page go to
``.artifacts/screenshots/`` (gitignored) for a person to look at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".artifacts" / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
PASSWORD = "browser-test-password"


@pytest.fixture
def console(live_api, tmp_path, request, monkeypatch) -> Iterator[Console]:
    """A fresh chromium profile, logged in as a superuser, for one test.

    The driver lives only as long as the test: Playwright's sync API keeps an asyncio loop
    in this thread, and while it exists Django refuses ORM calls from the thread (the
    "async context" guard) - which the test's own database checks, the isolated_backends
    fixture and the database teardown all make. Within the test the guard is lifted;
    the calls really are synchronous.
    """
    from django.contrib.auth.models import User

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} is missing: run `make browser` (apt)"
    url, _token = live_api
    User.objects.create_superuser("operator", "operator@example.com", PASSWORD)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    errors: list[str] = []
    with sync_playwright() as driver:
        context = driver.chromium.launch_persistent_context(
            str(tmp_path / "chromium-profile"), executable_path=CHROMIUM, args=CHROMIUM_ARGS,
            headless=True, viewport={"width": 1400, "height": 1000})
        context.set_default_timeout(20_000)
        page = context.pages[0] if context.pages else context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        console = Console(url, page, re.sub(r"\W+", "-", request.node.name).strip("-"))
        try:
            console.log_in()
            yield console
        finally:
            context.close()
    assert not errors, f"JavaScript errors on the pages: {errors}"


class Console:
    """A logged-in operator's browser tab, with a screenshot helper."""

    def __init__(self, base_url: str, page: Page, test_name: str) -> None:
        self.base_url, self.page, self.test_name = base_url, page, test_name
        self.shots = 0

    def open(self, path: str) -> Page:
        self.page.goto(self.base_url + path)
        return self.page

    def log_in(self) -> None:
        self.open("/admin/login/?next=/admin/")
        self.page.fill("#id_username", "operator")
        self.page.fill("#id_password", PASSWORD)
        self.page.click("input[type=submit]")
        self.page.wait_for_selector("#fleet-overview")

    def screenshot(self, label: str) -> Path:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.shots += 1
        path = SCREENSHOTS / f"{self.test_name}-{self.shots:02d}-{label}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path

    def text(self, selector: str) -> str:
        return self.page.inner_text(selector).strip()

    def wait_until(self, predicate: Callable[[], bool], timeout: float = 15.0) -> bool:
        from tests.waiting import wait_for

        return wait_for(predicate, timeout=timeout, interval=0.2)
