"""Admin login throttling (django-axes, orchestrator/settings.py) against the real server:
after AXES_FAILURE_LIMIT wrong passwords the right one is refused with the lockout page,
only for that username from that address; an operator unlocks with a command or the
console."""

from __future__ import annotations

import re

import httpx
from django.contrib.auth.models import User
from django.core.management import call_command

PASSWORD = "the-right-password-1"
ATTACKER = "203.0.113.7"  # through X-Forwarded-For, which uvicorn takes from 127.0.0.1


def login(url: str, password: str, *, username: str = "operator",
          address: str | None = None) -> httpx.Response:
    """The admin's login form as a browser fills it: GET for the CSRF token, then POST."""
    headers = {"X-Forwarded-For": address} if address else {}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as browser:
        form = browser.get("/admin/login/?next=/admin/")
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
        return browser.post("/admin/login/?next=/admin/", data={
            "csrfmiddlewaretoken": token, "username": username, "password": password,
            "next": "/admin/"}, headers={"Referer": f"{url}/admin/login/"})


def logged_in(response: httpx.Response) -> bool:
    return response.status_code == 302 and response.headers["location"] == "/admin/"


def test_five_wrong_passwords_lock_the_login_until_an_operator_resets_it(live_api, settings):
    url, _ = live_api
    User.objects.create_superuser("operator", "op@example.com", PASSWORD)
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        wrong = login(url, "guess", address=ATTACKER)
        assert wrong.status_code == 200 and "Please enter the correct" in wrong.text
    locked = login(url, "guess", address=ATTACKER)
    assert locked.status_code == 429
    # The right password from the guessing address is refused too, with a clear page.
    refused = login(url, PASSWORD, address=ATTACKER)
    assert refused.status_code == 429 and not logged_in(refused)
    assert "Login locked: too many failed attempts" in refused.text
    assert "manage.py axes_reset_username operator" in refused.text
    assert "0:15:00" in refused.text  # the default cool-off, 15 minutes
    # Only the pair is locked: the operator from their own address still logs in.
    assert logged_in(login(url, PASSWORD))

    call_command("axes_reset_username", "operator")
    assert logged_in(login(url, PASSWORD, address=ATTACKER))


def test_the_console_lists_the_attempts_and_deleting_one_unlocks(live_api, admin_client):
    url, _ = live_api
    User.objects.create_user("dev", "dev@example.com", PASSWORD, is_staff=True)
    for _ in range(5):
        login(url, "guess", username="dev", address=ATTACKER)
    assert login(url, PASSWORD, username="dev", address=ATTACKER).status_code == 429

    listing = admin_client.get("/admin/axes/accessattempt/")
    assert listing.status_code == 200
    assert "dev" in listing.content.decode() and ATTACKER in listing.content.decode()
    index = admin_client.get("/admin/").content.decode()
    assert "/admin/axes/accessattempt/" in index  # reachable from the console's index

    from axes.models import AccessAttempt

    (attempt,) = AccessAttempt.objects.filter(username="dev")
    deleted = admin_client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/",
                                {"post": "yes"})
    assert deleted.status_code == 302
    assert logged_in(login(url, PASSWORD, username="dev", address=ATTACKER))
