"""Fixtures of the token and ownership tests: clients holding tokens of a given scope and a
session owned by one of them."""

from __future__ import annotations

import time

import pytest

from foundation.core.models import ApiToken, TokenScope
from tests.conftest import ToolClient


def client_with(scope: str) -> ToolClient:
    token, raw = ApiToken.issue(f"{scope}-{time.monotonic_ns()}", scope)
    client = ToolClient(raw)
    client.token_name = token.name
    return client


@pytest.fixture
def owner() -> ToolClient:
    return client_with(TokenScope.WRITE)


@pytest.fixture
def session(owner) -> str:
    owner.ok("create_task", {"taskId": "own-task", "name": "Owned"})
    return owner.ok("start_session", {"taskId": "own-task"})["sessionId"]
