"""Handoffs between sessions (seed 001) and Slack notifications against real HTTP servers."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection

from bench.roundtrips import PostgresTrace
from contexts.services.projects import create_project
from sessions.models import SessionHandoff
from sessions.services import lifecycle, notifications
from tests import processes
from tests.sessions.helpers import conforms
from tests.waiting import wait_for


@pytest.fixture(autouse=True)
def repositories(db):
    # Handoffs are per project (issue 19): two repositories, two notes.
    for key in ("repo", "elsewhere"):
        create_project(key, key.title())


@pytest.mark.django_db
def test_handoff_round_trip_start_end_start(tools):
    first = tools.ok("start_session", {"sessionId": "a", "projectId": "repo", "agentId": "opus"})
    assert first["handoff"] is None
    ended = tools.ok("end_session", {"sessionId": "a", "summary": "Parser done",
                                     "openItems": ["write docs", "bench"]})
    assert ended["handoff"]["summary"] == "Parser done" and ended["handoff"]["active"] is True
    assert ended["handoff"]["fromAgent"] == "opus"
    nxt = tools.ok("start_session", {"sessionId": "b", "projectId": "repo"})
    assert nxt["handoff"]["summary"] == "Parser done"
    assert nxt["handoff"]["openItems"] == ["write docs", "bench"]
    # Seed 001: the note stays active until the next end_session replaces it.
    assert nxt["handoff"]["active"] is True and nxt["handoff"]["consumedAt"]
    assert nxt["handoff"]["consumedBySessionId"] == "b"
    other = tools.ok("start_session", {"sessionId": "d", "projectId": "elsewhere"})
    assert other["handoff"] is None
    tools.ok("end_session", {"sessionId": "b"})  # no summary: leaves the note as it is
    assert tools.ok("start_session", {"sessionId": "c", "projectId": "repo"})["handoff"][
        "summary"] == "Parser done"
    tools.ok("end_session", {"sessionId": "c", "summary": "Docs written"})
    assert tools.ok("start_session", {"sessionId": "e", "projectId": "repo"})["handoff"][
        "summary"] == "Docs written"


@pytest.mark.django_db
def test_two_parallel_sessions_both_see_the_handoff(tools):
    tools.ok("start_session", {"sessionId": "a", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "a", "summary": "Parser done"})
    first = tools.ok("start_session", {"sessionId": "p1", "projectId": "repo"})["handoff"]
    second = conforms("start_session", tools.ok("start_session", {
        "sessionId": "p2", "projectId": "repo"}))["handoff"]
    assert first["handoffId"] == second["handoffId"]
    assert first["summary"] == second["summary"] == "Parser done"
    # consumedAt is the first read, kept; lastConfirmedAt moves with every read.
    assert second["consumedAt"] == first["consumedAt"]
    assert second["consumedBySessionId"] == "p1"
    assert second["lastConfirmedAt"] >= first["lastConfirmedAt"]
    note = SessionHandoff.objects.get(project_id="repo")
    assert note.active and note.consumed_by_session_id == "p1"
    assert note.last_confirmed_at >= note.consumed_at


@pytest.mark.django_db(transaction=True)
def test_parallel_starts_read_the_note_while_it_stays_the_only_active_one(tools):
    tools.ok("start_session", {"sessionId": "a", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "a", "summary": "shared note"})
    barrier = threading.Barrier(4)
    seen: list[str | None] = []

    def start(n: int) -> None:
        barrier.wait()
        try:
            answer = lifecycle.start_session(session_id=f"p{n}", project_id="repo")
            seen.append((answer["handoff"] or {}).get("summary"))
        finally:
            connection.close()

    threads = [threading.Thread(target=start, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == ["shared note"] * 4
    assert SessionHandoff.objects.filter(project_id="repo", active=True).count() == 1


@pytest.mark.django_db
def test_a_new_handoff_replaces_the_active_one(tools):
    for sid in ("a", "b"):
        tools.ok("start_session", {"sessionId": sid, "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "a", "summary": "first"})
    tools.ok("end_session", {"sessionId": "b", "summary": "second"})
    assert list(SessionHandoff.objects.filter(active=True).values_list("summary", flat=True)) \
        == ["second"]


@pytest.mark.django_db
def test_end_session_with_a_note_is_one_database_round_trip(tools):
    """The end, the task count, the project's lock, the old note's deactivation and the
    new note: one pipeline of prepared statements, one transaction."""
    for sid in ("warm", "a", "b"):
        tools.ok("start_session", {"sessionId": sid, "projectId": "repo"})
    lifecycle.end_session("warm", summary="prepares the statements")
    trace = PostgresTrace()
    with trace.capture():
        body = lifecycle.end_session("a", summary="parser done", open_items=["tests"])
    assert trace.round_trips() == 1, trace.statements()
    assert body["handoff"]["summary"] == "parser done"
    with trace.capture():
        assert lifecycle.end_session("b")["handoff"] is None
    assert trace.round_trips() == 1, trace.statements()
    assert list(SessionHandoff.objects.filter(project_id="repo", active=True)
                .values_list("from_session_id", "open_items")) == [("a", ["tests"])]


@pytest.mark.django_db
def test_ending_a_session_that_is_not_live_leaves_no_note(tools):
    tools.ok("start_session", {"sessionId": "a", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "a", "summary": "the real note"})
    again = tools.call("end_session", {"sessionId": "a", "summary": "a second note"})
    assert (again.status, again.error_code) == (409, "E1602")
    ghost = tools.call("end_session", {"sessionId": "ghost", "summary": "from nowhere"})
    assert (ghost.status, ghost.error_code) == (404, "E1600")
    assert list(SessionHandoff.objects.values_list("summary", "active")) == [
        ("the real note", True)]


@pytest.mark.django_db(transaction=True)
def test_concurrent_end_sessions_leave_exactly_one_active_handoff(tools):
    for n in range(6):
        tools.ok("start_session", {"sessionId": f"s{n}", "projectId": "repo"})
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def end(n: int) -> None:
        barrier.wait()
        try:
            lifecycle.end_session(f"s{n}", summary=f"from {n}")
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=end, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert SessionHandoff.objects.filter(project_id="repo").count() == 6
    assert SessionHandoff.objects.filter(project_id="repo", active=True).count() == 1


class _Handler(http.server.BaseHTTPRequestHandler):
    mode = "ok"
    received: list[dict] = []
    answered: list[int] = []

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).received.append(json.loads(body))
        if self.mode == "hang":
            time.sleep(notifications.TIMEOUT_SECONDS + 3)
        failed = self.mode == "error" or (self.mode == "flaky" and len(self.answered) < 2)
        type(self).answered.append(500 if failed else 200)
        self.send_response(500 if failed else 200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook(request) -> Iterator[tuple[str, type]]:
    handler = type("Handler", (_Handler,), {"mode": request.param, "received": [],
                                            "answered": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("webhook", ["ok"], indirect=True)
def test_slack_notifications_are_queued_and_posted_by_the_worker(tools, settings, webhook,
                                                                 tmp_path):
    url, handler = webhook
    settings.SLACK_WEBHOOK_URL = url
    env = processes.service_env(tmp_path, SLACK_WEBHOOK_URL=url)
    with processes.running({"worker": processes.celery_worker()}, env, tmp_path / "log"):
        assert tools.ok("start_session", {"sessionId": "s1", "projectId": "repo",
                                          "agentId": "opus"})["notificationStatus"] == "sent"
        assert tools.ok("end_session", {"sessionId": "s1", "summary": "done"}
                        )["notificationStatus"] == "sent"
        assert wait_for(lambda: len(handler.received) == 2, timeout=60), \
            (tmp_path / "log").read_text()[-3000:]
    assert handler.received == [{"text": "repo session open - opus"},
                                {"text": "repo session closed - opus - done"}]


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("webhook", ["flaky"], indirect=True)
def test_a_failed_post_is_retried_by_the_worker(tools, settings, webhook, tmp_path):
    url, handler = webhook  # answers 500 twice, then 200
    settings.SLACK_WEBHOOK_URL = url
    env = processes.service_env(tmp_path, SLACK_WEBHOOK_URL=url,
                                SLACK_NOTIFY_RETRY_SECONDS="0.2")
    with processes.running({"worker": processes.celery_worker()}, env, tmp_path / "log"):
        assert tools.ok("start_session", {"sessionId": "s1", "projectId": "repo",
                                          "agentId": "opus"})["notificationStatus"] == "sent"
        assert wait_for(lambda: handler.answered == [500, 500, 200], timeout=60), \
            (handler.answered, (tmp_path / "log").read_text()[-3000:])
    assert handler.received == [{"text": "repo session open - opus"}] * 3


@pytest.mark.django_db
@pytest.mark.parametrize("webhook", ["hang"], indirect=True)
def test_the_call_never_posts_itself(tools, settings, webhook):
    # A webhook that hangs cannot hold the call: the call only queues the message (no
    # worker runs here, so nothing is posted at all).
    url, handler = webhook
    settings.SLACK_WEBHOOK_URL = url
    body = tools.ok("start_session", {"sessionId": "s1"})
    assert body["notificationStatus"] == "sent" and body["status"] == "active"
    ended = tools.ok("end_session", {"sessionId": "s1", "summary": "bye"})
    assert ended["notificationStatus"] == "sent" and ended["handoff"]["summary"] == "bye"
    assert handler.received == []


def test_a_broker_that_does_not_answer_is_a_failed_notification():
    # Redis (the broker) on a closed port: the message cannot be queued, the call goes on.
    from tests.conftest import free_port

    env = {**os.environ, "SLACK_WEBHOOK_URL": "http://127.0.0.1:9/hook",
           "REDIS_URL": f"redis://127.0.0.1:{free_port()}/0", "DJANGO_SETTINGS_MODULE":
           "orchestrator.settings"}
    env.pop("CELERY_BROKER_URL", None)
    script = ("import django; django.setup(); from sessions.services import notifications; "
              "print(notifications.notify('x'))")
    done = subprocess.run([sys.executable, "-c", script], cwd=processes.ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "failed"


@pytest.mark.django_db
def test_a_resumed_conversation_reads_its_own_note_and_leaves_the_active_one(tools):
    tools.ok("start_session", {"sessionId": "a", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "a", "summary": "A's note"})
    tools.ok("start_session", {"sessionId": "b", "projectId": "repo"})
    tools.ok("end_session", {"sessionId": "b", "summary": "B's note"})
    resumed = tools.ok("start_session", {"sessionId": "a2", "projectId": "repo",
                                         "previousSessionId": "a"})
    assert resumed["handoff"]["summary"] == "A's note"
    assert resumed["handoff"]["active"] is False
    active = SessionHandoff.objects.get(project_id="repo", active=True)
    assert active.summary == "B's note" and active.consumed_at is None
    # A previous session that left no note: the project's active note, read as usual.
    fresh = tools.ok("start_session", {"sessionId": "c", "projectId": "repo",
                                       "previousSessionId": "never-ended"})
    assert fresh["handoff"]["summary"] == "B's note"
    assert fresh["handoff"]["consumedBySessionId"] == "c"
