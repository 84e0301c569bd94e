"""The console's token page says how long a revoked token may still work: each server
process keeps a valid token for foundation.core.auth.TOKEN_CACHE_SECONDS."""

from __future__ import annotations

import pytest

from foundation.core import auth
from foundation.core.models import ApiToken

pytestmark = pytest.mark.django_db


@pytest.fixture
def token():
    return ApiToken.issue("ci-bot")[0]


def delay_text() -> str:
    return f"{auth.TOKEN_CACHE_SECONDS:g} seconds"


def test_the_revoked_field_names_the_cache_time(admin_client, token, monkeypatch):
    monkeypatch.setattr(auth, "TOKEN_CACHE_SECONDS", 17.0)  # the real value, whatever it is
    page = admin_client.get(f"/admin/orchestrator/apitoken/{token.pk}/change/")
    assert page.status_code == 200
    assert "within 17 seconds by the others" in page.content.decode()


def test_revoking_on_the_change_page_warns_of_the_cache_time(admin_client, token):
    renamed = admin_client.post(f"/admin/orchestrator/apitoken/{token.pk}/change/",
                                {"name": "ci-bot-2", "scope": token.scope}, follow=True)
    assert "may still accept it" not in renamed.content.decode()  # only a revocation warns
    token.refresh_from_db()
    answer = admin_client.post(f"/admin/orchestrator/apitoken/{token.pk}/change/",
                               {"name": token.name, "scope": token.scope, "revoked": "on"},
                               follow=True)
    assert answer.status_code == 200
    token.refresh_from_db()
    assert token.revoked
    text = answer.content.decode()
    assert f"may still accept it for up to {delay_text()}" in text


def test_the_revoke_action_warns_of_the_cache_time(admin_client, token):
    answer = admin_client.post("/admin/orchestrator/apitoken/",
                               {"action": "revoke", "_selected_action": [token.pk]}, follow=True)
    assert answer.status_code == 200
    token.refresh_from_db()
    assert token.revoked
    assert f"may still accept it for up to {delay_text()}" in answer.content.decode()

