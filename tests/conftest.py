"""Shared fixtures. Every test talks to real servers: the launcher (``make test``) starts
Postgres, Redis and a Bolt graph server, or uses the ones configured in the environment.
A missing server fails the run; nothing here skips."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.conf import settings
from django.test import Client

from foundation.backends import redis_store
from foundation.core.db import set_harness_blocks
from foundation.core.tools.access import forget_entity_projects, forget_session_owners
from sessions.services.markers import forget_redis_markers

# The suite drives thousands of calls a minute through one token (tests/fuzz, the load
# tests), as the bench does: every call still goes through the per-token rate limit
# (orchestrator.web.ratelimit: counted in Redis, in leases for a busy token), under a
# limit no test reaches unless it sets a lower one (tests/web/test_ratelimit.py). The
# environment is for the servers tests start as processes.
SUITE_RATE_LIMIT = "10000000/minute"
os.environ.setdefault("API_RATE_LIMIT", SUITE_RATE_LIMIT)


# A test driving a real agent CLI (its npm install on first use, then a real run per step
# against a scripted model) takes tens of seconds: it belongs to the slow suite (make
# test-slow) whatever its file says.
REAL_AGENT_MARKERS = ("claude_code", "codex", "gemini")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.get_closest_marker(name) for name in REAL_AGENT_MARKERS):
            item.add_marker(pytest.mark.slow)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Postgres's code for a transaction it aborted to break a deadlock.
DEADLOCK_DETECTED = "40P01"


@pytest.fixture(scope="session", autouse=True)
def flush_retried_after_a_deadlock() -> Iterator[None]:
    """A transactional test ends with Django's flush (one TRUNCATE of every table). A web
    server the test started keeps running its background writers, and one still in a
    transaction over two tables can deadlock with the TRUNCATE (seen once in a CI
    rehearsal, a second after the test's end_session: most likely the graph outbox's
    drain). Postgres then aborts the TRUNCATE, which changed nothing, and the flush is run
    again."""
    from django.core.management.base import CommandError
    from django.core.management.commands import flush

    original = flush.Command.handle

    def handle(self, **options):
        for _ in range(4):
            try:
                return original(self, **options)
            except CommandError as exc:  # from Django's error, from psycopg's
                cause = getattr(exc.__cause__, "__cause__", None)
                if getattr(cause, "sqlstate", None) != DEADLOCK_DETECTED:
                    raise
        return original(self, **options)  # the fifth time, whatever it raises

    flush.Command.handle = handle
    try:
        yield
    finally:
        flush.Command.handle = original


@pytest.fixture(autouse=True)
def isolated_backends(settings, tmp_path, request):
    """Per-test file roots, a clean Redis database and, for DB tests, the project's row."""
    settings.CONTEXT_DIR = tmp_path / "contexts"
    settings.RECOVERY_DIR = tmp_path / "recovery"
    # Tests read the index files right after a call: write them synchronously
    # (test_history and test_switch check the background writer on their own).
    settings.INDEX_FILE_DELAY_MS = 0
    settings.HISTORY_MIRROR_DELAY_MS = 0
    # ... and drain the graph outbox in the call that queued it (tests/graph/test_outbox.py
    # checks the background drain on its own).
    settings.GRAPH_OUTBOX_DELAY_MS = 0
    # ... and record a claim's file conflict in the claiming call (claims.services.overlaps).
    settings.FILE_CLAIM_OVERLAP_DELAY_MS = 0
    settings.API_RATE_LIMIT = SUITE_RATE_LIMIT
    redis_store.breaker.reset()
    redis_store.run(lambda r: r.flushdb())
    forget_session_owners()
    forget_entity_projects()
    forget_redis_markers()
    names = request.fixturenames
    uses_db = ("db" in names or "transactional_db" in names
               or request.node.get_closest_marker("django_db") is not None)
    transactional = uses_db and _is_transactional(request)
    # The default hasher costs seconds per hash on these machines (admin_client logs in).
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    if uses_db:
        # Set the database up first (pytest-django picks plain or transactional from the
        # test's fixtures and marks), then restore what a transactional flush removed.
        request.getfixturevalue("_django_db_helper")
        if transactional:
            truncate_spec_tables()
        else:
            # The test case's atomic blocks around the test never commit: the code under
            # test must not take them for a caller's transaction (core.db).
            from django.db import connection

            set_harness_blocks(len(connection.atomic_blocks))
        ensure_project_row()
        empty_graph()
    yield
    if transactional:
        # What it committed to the spec tables is gone before the next test of this
        # process, whatever its kind: Django's flush after it does not reach them, and a
        # plain test of another file (a parallel worker runs files in any order) would
        # see its rows.
        truncate_spec_tables()
    set_harness_blocks(0)
    redis_store.breaker.reset()


def _is_transactional(request) -> bool:
    marker = request.node.get_closest_marker("django_db")
    return ("transactional_db" in request.fixturenames or "live_api" in request.fixturenames
            or bool(marker and marker.kwargs.get("transaction")))


SPEC_TABLES = ("task_contexts", "context_versions", "active_sessions", "checkpoints",
               "global_context", "context_conflicts", "task_relationships")
# The models' tables in the spec schema's internal companion: out of the flush's sight too.
INTERNAL_TABLES = ("global_context_versions", "task_critical_keys", "checkpoint_details",
                   "project_learnings")


def truncate_spec_tables() -> None:
    """Empty the spec tables (and the internal ones beside them) around a transactional test.

    Django's flush only sees tables on the search_path, so it leaves the MCP_SCHEMA
    tables full between transactional tests. TRUNCATE fires no row triggers, so the
    immutability guard on context_versions does not object.
    """
    from django.db import connection

    from foundation.core.db import internal_schema, qualified

    internal = internal_schema(settings.MCP_SCHEMA)
    tables = [qualified(t) for t in SPEC_TABLES] + [f'"{internal}"."{t}"'
                                                     for t in INTERNAL_TABLES]
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE " + ", ".join(tables))


def empty_graph() -> None:
    """Start each database test with an empty graph mirror, as Postgres and Redis are."""
    if not settings.ENABLE_NEO4J:
        return
    from graph import backend

    try:
        backend.cypher("MATCH (n) DETACH DELETE n")
    except Exception:
        # The graph tests assert on the server being up; other tests must not depend on it.
        backend.reset()


def ensure_project_row() -> None:
    # A transactional test's flush truncates global_context and projects; put the
    # migrations' rows back.
    from contexts.models import GlobalContext
    from foundation.core.models import Project

    Project.objects.get_or_create(id=settings.MCP_PROJECT_ID,
                                  defaults={"name": "Story Portal App"})
    GlobalContext.objects.get_or_create(
        project_id=settings.MCP_PROJECT_ID,
        defaults={"project_name": "Story Portal App",
                  "description": "Full-stack story collaboration platform"},
    )


@pytest.fixture
def api_token(db) -> str:
    from foundation.core.models import ApiToken

    _, raw = ApiToken.issue(f"test-{time.monotonic_ns()}")
    return raw


@dataclass
class ToolResponse:
    status: int
    body: dict[str, Any]

    @property
    def error_code(self) -> str | None:
        error = self.body.get("error") if isinstance(self.body, dict) else None
        return error.get("code") if isinstance(error, dict) else None


class ToolClient:
    """Calls tools over REST through the code production serves them with
    (``orchestrator.web.fastlane.answer``: token, JSON body, registry, error mapping, the
    JSON encoding on the wire), in this thread and transaction; browsing endpoints through
    Django's test client."""

    def __init__(self, token: str, project: str | None = None):
        """``project``: the X-Orchestrator-Project header every call sends (a hook client
        set up by claude_setup does)."""
        self.authorization = f"Bearer {token}"
        self.project = project
        self.client = Client(HTTP_AUTHORIZATION=self.authorization)

    def call(self, tool: str, payload: Any = None, *, raw: str | None = None) -> ToolResponse:
        from orchestrator.web import fastlane

        data = raw if raw is not None else json.dumps(payload if payload is not None else {})
        status, body, _ = fastlane.answer(tool, self.authorization, data.encode(),
                                          self.project)
        return ToolResponse(status, json.loads(fastlane.encode(body)))

    def ok(self, tool: str, payload: Any = None) -> dict[str, Any]:
        response = self.call(tool, payload)
        assert response.status == 200, (tool, response.status, response.body)
        return response.body

    def get(self, path: str, **params) -> ToolResponse:
        response = self.client.get(path, params)
        return ToolResponse(response.status_code, response.json())


@pytest.fixture
def tools(api_token) -> ToolClient:
    return ToolClient(api_token)


@pytest.fixture
def make_task(tools):
    """Create a task through the real tool: make_task("t1", keyFiles=[...])."""
    def make(task_id: str, **fields):
        body = {"taskId": task_id, "name": fields.pop("name", f"Task {task_id}"), **fields}
        return tools.ok("create_task", body)
    return make


class LiveServer:
    """uvicorn serving orchestrator.asgi in a thread: real HTTP for REST and MCP."""

    def __init__(self) -> None:
        import uvicorn

        from orchestrator.web.tool_protocol import ToolCallProtocol

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config("orchestrator.asgi:application", host="127.0.0.1",
                                port=self.port, log_level="warning", lifespan="on",
                                http=ToolCallProtocol)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("live server did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        # Worker threads of the server may still hold connections to the test database,
        # which would stop pytest-django from dropping it.
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                           "WHERE datname = current_database() AND pid <> pg_backend_pid()")


@pytest.fixture(scope="session")
def live_server_url(django_db_setup, django_db_blocker) -> Iterator[str]:
    server = LiveServer()
    server.start()
    yield server.url
    with django_db_blocker.unblock():
        server.stop()


def metrics_token() -> str:
    """A new token of scope metrics: what a Prometheus scraper reads /metrics with."""
    from foundation.core.models import ApiToken, TokenScope

    return ApiToken.issue(f"metrics-{time.monotonic_ns()}", TokenScope.METRICS)[1]


@pytest.fixture
def live_api(live_server_url, transactional_db):
    """Base URL of the live server, with a token; data must be committed to be seen."""
    from foundation.core.models import ApiToken

    _, raw = ApiToken.issue(f"live-{time.monotonic_ns()}")
    return live_server_url, raw
