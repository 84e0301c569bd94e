"""Bearer tokens: a missing or revoked token is 401 E1609; the read scope calls only read-only
tools (E1608); create_api_token --scope. (Who may write a session: test_session_ownership.py;
a wrong token over REST and MCP: tests/web/test_transports.py.)"""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import Client

from foundation.core.models import ApiToken, TokenScope, hash_token
from tests.foundation.conftest import client_with

pytestmark = pytest.mark.django_db


def test_read_token_calls_only_read_only_tools(session):
    reader = client_with(TokenScope.READ)
    refused = reader.call("create_task", {"taskId": "read-made", "name": "no"})
    assert (refused.status, refused.error_code) == (403, "E1608")
    assert reader.call("start_session", {}).error_code == "E1608"
    assert reader.ok("get_unified_context", {"taskId": "own-task"})["task"]["taskId"] == \
        "own-task"
    assert reader.get("/api/v1/tasks/").status == 200
    from contexts.models import TaskContext

    assert not TaskContext.objects.filter(task_id="read-made").exists()


def test_create_api_token_scopes():
    out = io.StringIO()
    call_command("create_api_token", "scoped-reader", "--scope", "read", stdout=out)
    raw = out.getvalue().strip().splitlines()[-1]
    token = ApiToken.objects.get(name="scoped-reader")
    assert token.scope == TokenScope.READ and token.token_hash == hash_token(raw)
    call_command("create_api_token", "default-scope", stdout=io.StringIO())
    assert ApiToken.objects.get(name="default-scope").scope == TokenScope.WRITE


def test_browsing_api_requires_a_token(db, client: Client):
    response = client.post("/api/v1/tools/get_unified_context/", {}, content_type="application/json")
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "E1609"


def test_a_revoked_token_stops_working(db, client: Client):
    from foundation.core.models import ApiToken

    token, raw = ApiToken.issue("short-lived")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {raw}"}
    url = "/api/v1/tools/get_unified_context/"
    assert client.post(url, {}, content_type="application/json", **headers).status_code == 200
    token.revoked = True
    token.save()
    assert client.post(url, {}, content_type="application/json", **headers).status_code == 401
