"""A backend that accepts connections and never answers costs seconds, not a worker:
Postgres answers 503 E1654, the graph falls back to Postgres; a query stuck behind a lock
is cut by the request statement timeout. The hung servers are real listening sockets."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from django.db import connection, connections
from django.test import Client

from graph import backend
from tests.processes import database_url

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def silent_server() -> Iterator[int]:
    """Port of a server that accepts every connection and never sends a byte."""
    listener = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    for sock in [*held, listener]:
        sock.close()


def test_postgres_that_never_answers_is_503_within_seconds(django_db_blocker, silent_server):
    databases = connections.settings
    original = databases["default"]
    original_connection = connections["default"]
    databases["default"] = {**original, "HOST": "127.0.0.1", "PORT": str(silent_server),
                            "CONN_MAX_AGE": 0,
                            "OPTIONS": {**original["OPTIONS"], "connect_timeout": 2}}
    connections.close_all()
    del connections["default"]
    try:
        with django_db_blocker.unblock():
            started = time.monotonic()
            response = Client(HTTP_AUTHORIZATION="Bearer whatever").post(
                "/api/v1/tools/get_unified_context/", {}, content_type="application/json")
            elapsed = time.monotonic() - started
    finally:
        databases["default"] = original
        connections["default"].close()
        connections["default"] = original_connection
    assert response.status_code == 503
    assert response.json()["error"]["code"] == "E1654"
    assert elapsed < 8, elapsed


@pytest.mark.django_db
def test_bolt_server_that_never_answers_falls_back_within_seconds(tools, settings,
                                                                    silent_server,
                                                                    monkeypatch):
    settings.ENABLE_NEO4J = True
    settings.NEO4J_READ_TIMEOUT_SECONDS = 1.5
    settings.NEOMODEL_DATABASE_URL = f"bolt://root:x@127.0.0.1:{silent_server}"
    backend.reset()
    tools.ok("create_task", {"taskId": "hung-a", "name": "a"})
    started = time.monotonic()
    read = tools.ok("get_task_graph", {"taskId": "hung-a"})
    assert time.monotonic() - started < 8
    assert read["metadata"]["source"] == "postgres" and read["metadata"]["fallback"] is True
    # The breaker is open: the next read does not ask the silent server again (every Bolt
    # exchange goes through _within_read_timeout; none is made).
    exchanges: list[object] = []
    bounded = backend._within_read_timeout
    monkeypatch.setattr(backend, "_within_read_timeout",
                        lambda function: (exchanges.append(function), bounded(function))[1])
    again = tools.ok("get_task_graph", {"taskId": "hung-a"})
    assert exchanges == []
    assert again["metadata"]["source"] == "postgres" and again["metadata"]["fallback"] is True
    backend.reset()


@pytest.mark.django_db(transaction=True)
def test_statement_timeout_cuts_a_query_stuck_behind_a_lock(tools):
    tools.ok("create_task", {"taskId": "stuck", "name": "stuck"})
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    holder = psycopg.connect(**params)
    try:
        from foundation.core.db import qualified

        holder.execute(f"SELECT 1 FROM {qualified('task_contexts')} WHERE task_id = 'stuck' "
                       "FOR UPDATE")  # holds the row lock in an open transaction
        with connection.cursor() as cursor:
            # What the web server's connections get from REQUEST_STATEMENT_TIMEOUT_MS.
            cursor.execute("SET statement_timeout = '1500ms'")
        started = time.monotonic()
        response = tools.call("save_context_snapshot", {"taskId": "stuck",
                                                        "updates": {"currentPhase": "x"}})
        elapsed = time.monotonic() - started
    finally:
        holder.rollback()
        holder.close()
        with connection.cursor() as cursor:
            cursor.execute("RESET statement_timeout")
    assert (response.status, response.error_code) == (503, "E1654"), response.body
    assert "statement timeout" in response.body["error"]["message"]
    assert elapsed < 6, elapsed
    task = tools.ok("get_unified_context", {"taskId": "stuck"})["task"]
    assert task["currentPhase"] is None and task["version"] == 1


def show_statement_timeout(env_extra: dict[str, str]) -> str:
    env = {name: value for name, value in os.environ.items()
           if name != "ORCHESTRATOR_SERVES_REQUESTS"}
    env.update({"DATABASE_URL": database_url(),
                "ENABLE_NEO4J": "false", **env_extra})
    script = ("from django.db import connection\n"
              "with connection.cursor() as c:\n"
              "    c.execute('SHOW statement_timeout'); print(c.fetchone()[0])")
    result = subprocess.run([sys.executable, "manage.py", "shell", "-c", script], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=120, check=True)
    return result.stdout.strip().splitlines()[-1]


@pytest.mark.django_db(transaction=True)
def test_only_request_processes_get_the_statement_timeout():
    assert show_statement_timeout({"ORCHESTRATOR_SERVES_REQUESTS": "1",
                                   "REQUEST_STATEMENT_TIMEOUT_MS": "4321"}) == "4321ms"
    # Commands (migrate, sync, prune) and Celery jobs: no timeout.
    assert show_statement_timeout({"REQUEST_STATEMENT_TIMEOUT_MS": "4321"}) == "0"

