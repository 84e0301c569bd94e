"""The graph outbox: saves and switches queue, a drain applies, the mirror equals Postgres.

Transactional: the drains (inline here, GRAPH_OUTBOX_DELAY_MS=0, or the background
thread) read what the calls committed, as in a server.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from django.core.management import CommandError, call_command

from graph import backend
from graph.models import GraphOutboxEntry
from graph.services.outbox import drain_outbox
from graph.services.sync import sync_graph
from tests.conftest import free_port
from tests.waiting import wait_for

pytestmark = pytest.mark.django_db(transaction=True)


def assert_graph_equals_postgres() -> None:
    """sync_graph diffs the whole mirror against Postgres: it must find nothing to do."""
    report = sync_graph()
    assert report["success"], report
    assert report["tasks"] == {"created": 0, "updated": 0, "deleted": 0}, report
    assert report["agents"] == {"created": 0, "deleted": 0}, report
    assert report["edges"] == {"created": 0, "updated": 0, "deleted": 0}, report
    assert report["sessions"] == {"repaired": 0, "deleted": 0}, report


def work_through_a_day(tools) -> list[dict]:
    """Tasks, saves, sessions, switches, a heartbeat moving task, an end and a sweep."""
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from contexts.models import TaskContext
    from sessions.models import ActiveSession
    from sessions.services.recovery import remove_sessions

    answers = []
    tools.ok("create_task", {"taskId": "o1", "name": "O1", "agentType": "backend"})
    tools.ok("create_task", {"taskId": "o3", "name": "O3"})
    answers.append(tools.ok("save_context_snapshot", {"taskId": "o1", "updates": {
        "status": "in_progress", "currentPhase": "build", "score": 12.5}}))
    answers.append(tools.ok("save_context_snapshot", {"taskId": "o2", "updates": {
        "status": "blocked"}}))
    # Another program's raw UPDATE is queued by the trigger just the same.
    TaskContext.objects.filter(task_id="o2").update(priority=7, agent_type="frontend")
    tools.ok("start_session", {"sessionId": "os1", "taskId": "o1", "agentId": "claude-a"})
    tools.ok("start_session", {"sessionId": "os2", "agentId": "claude-b"})
    tools.ok("switch_task", {"fromTaskId": "o1", "toTaskId": "o2", "sessionId": "os2",
                             "currentTaskUpdates": {"currentPhase": "review"}})
    tools.ok("heartbeat", {"sessionId": "os2", "taskId": "o3"})
    tools.ok("end_session", {"sessionId": "os1"})
    ActiveSession.objects.filter(session_id="os1").update(
        ended_at=timezone.now() - timedelta(hours=settings.STALE_SESSION_HOURS + 1))
    # The stale sweep deletes nothing any more; removing a session with its records is
    # retention's (recovery.remove_sessions).
    assert remove_sessions(["os1"]) == ["os1"]
    tools.ok("create_task", {"taskId": "o4", "name": "O4"})
    TaskContext.objects.filter(task_id="o4").delete()  # a raw delete is queued as well
    return answers


def relate_two_tasks(tools) -> None:
    """o2 and an edge to it, written while the graph is up: relationship changes go to
    the graph at once (their service reports it), not through the outbox."""
    tools.ok("create_task", {"taskId": "o2", "name": "O2"})
    tools.ok("create_task", {"taskId": "o0", "name": "O0"})
    tools.ok("add_task_relationship", {"sourceTaskId": "o0", "targetTaskId": "o2",
                                       "relationshipType": "blocks"})


def test_changes_made_while_the_graph_is_down_reach_it_when_it_is_back(
        tools, graph_server, settings):
    relate_two_tasks(tools)
    live_url = settings.NEOMODEL_DATABASE_URL
    settings.NEOMODEL_DATABASE_URL = f"bolt://neo4j:x@127.0.0.1:{free_port()}"
    backend.reset()
    answers = work_through_a_day(tools)
    assert [a["graph"] for a in answers] == ["queued", "queued"]
    assert GraphOutboxEntry.objects.exists()
    # While the mirror lags, graph reads answer from Postgres (and say so).
    metadata = tools.ok("get_task_graph", {})["metadata"]
    assert (metadata["source"], metadata["fallback"]) == ("postgres", True)
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("drain_graph_outbox", stdout=out)
    assert "still queued" in out.getvalue()

    settings.NEOMODEL_DATABASE_URL = live_url
    backend.reset()
    call_command("drain_graph_outbox", stdout=out)
    assert "applied" in out.getvalue()
    assert not GraphOutboxEntry.objects.exists()
    assert_graph_equals_postgres()
    assert tools.ok("get_task_graph", {})["metadata"]["source"] == "neo4j"
    assert backend.cypher("MATCH (s:Session)-[:WORKS_ON]->(t:Task) "
                          "RETURN s.sessionId, t.taskId ORDER BY t.taskId") == [
        ["os2", "o2"], ["os2", "o3"]]


def test_changes_drained_as_they_happen_keep_the_graph_equal(tools, graph_server):
    relate_two_tasks(tools)
    work_through_a_day(tools)
    # Each tool call drained the queue (with whatever else was in it, such as the raw
    # UPDATE of "another program"); the raw DELETE at the end sent no signal and waits
    # for the beat drain, run here.
    assert list(GraphOutboxEntry.objects.values_list("kind", "entity_id")) == [
        ("task", "o4")]
    assert drain_outbox()["applied"] == 1
    assert not GraphOutboxEntry.objects.exists()
    assert_graph_equals_postgres()


@contextlib.contextmanager
def blackhole() -> Iterator[int]:
    """A port that accepts connections and never answers (a hung graph server)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            with contextlib.suppress(OSError):
                accepted.append(server.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        for connection in accepted:  # the waiting drainer gets its error now
            connection.close()
        server.close()


def test_a_save_or_switch_never_waits_for_a_hung_graph_server(tools, graph_server, settings,
                                                               monkeypatch):
    """Saves and switches queue the graph's changes; only the background drain talks to
    the (hung) graph server. Every Bolt exchange goes through _within_read_timeout: none
    is made in the calling thread."""
    live_url = settings.NEOMODEL_DATABASE_URL
    callers: list[threading.Thread] = []
    bounded = backend._within_read_timeout
    monkeypatch.setattr(backend, "_within_read_timeout", lambda function: (
        callers.append(threading.current_thread()), bounded(function))[1])
    tools.ok("create_task", {"taskId": "h1", "name": "H1"})
    tools.ok("create_task", {"taskId": "h2", "name": "H2"})
    tools.ok("add_task_relationship", {"sourceTaskId": "h1", "targetTaskId": "h2",
                                       "relationshipType": "blocks"})
    tools.ok("start_session", {"sessionId": "hs", "taskId": "h1", "agentId": "a"})
    settings.GRAPH_OUTBOX_DELAY_MS = 20  # drain in the background thread, as a server does
    with blackhole() as port:
        settings.NEOMODEL_DATABASE_URL = f"bolt://neo4j:x@127.0.0.1:{port}"
        backend.reset()
        callers.clear()  # the set-up above wrote the graph in this thread
        for phase in ("a", "b", "c"):
            answer = tools.ok("save_context_snapshot", {"taskId": "h1", "updates": {
                "currentPhase": phase}})
            assert answer["graph"] == "queued"
        switched = tools.ok("switch_task", {"fromTaskId": "h1", "toTaskId": "h2",
                                            "sessionId": "hs"})
        assert switched["newTask"]["blockedBy"] == [{"taskId": "h1", "name": "H1"}]
        assert threading.current_thread() not in callers
        # ... while the background drain did go to the hung server.
        assert wait_for(lambda: len(callers) > 0)
    settings.NEOMODEL_DATABASE_URL = live_url
    backend.reset()
    deadline = time.monotonic() + 30
    while not drain_outbox()["success"] and time.monotonic() < deadline:
        backend.reset()  # the background drain may have tripped the breaker meanwhile
        time.sleep(0.2)
    assert not GraphOutboxEntry.objects.exists()
    assert backend.cypher("MATCH (t:Task {taskId: 'h1'}) RETURN t.phase") == [["c"]]
    assert backend.cypher("MATCH (:Session {sessionId: 'hs'})-[:WORKS_ON]->(t:Task) "
                          "RETURN t.taskId ORDER BY t.taskId") == [["h1"], ["h2"]]
    assert_graph_equals_postgres()


def test_a_drain_unlinks_an_agent_from_many_tasks_in_one_batch(graph_server, settings):
    """One agent HANDLES many tasks (every hook client is ``claude-code``): a batch that
    redoes the session HANDLES edges of all of them deletes them in one statement. ArcadeDB
    failed that statement (EntityNotFound) when the edges it deleted were read lazily
    while deleting, so the queue stuck at that batch and every drain retried it."""
    from graph.services.mirror import session_handles_statements

    settings.NEO4J_READ_TIMEOUT_SECONDS = 30  # a slow machine is not what this checks
    task_ids = [f"many-{i:03d}" for i in range(200)]
    backend.write([("UNWIND $ids AS id MERGE (a:Agent {agentId: 'claude-code'}) "
                    "MERGE (t:Task {taskId: id}) MERGE (a)-[:HANDLES {via: 'session'}]->(t)",
                    {"ids": task_ids})])
    backend.write(session_handles_statements(task_ids))  # no live work: every edge goes
    assert backend.cypher("MATCH (:Agent)-[h:HANDLES]->(:Task) RETURN count(h)") == [[0]]


def test_a_drain_the_graph_server_did_not_answer_in_time_is_retried_in_smaller_batches(
        tools, graph_server, settings, monkeypatch):
    """A drain that failed (here: a graph server that never answers) halves the next
    batch, so a slow server catches up in batches it can answer in time; each batch
    written doubles it again."""
    from graph.services import outbox

    monkeypatch.setattr(outbox, "batch_size", outbox.BATCH_SIZE)
    live_url = settings.NEOMODEL_DATABASE_URL
    settings.NEO4J_READ_TIMEOUT_SECONDS = 0.5
    with blackhole() as port:
        settings.NEOMODEL_DATABASE_URL = f"bolt://neo4j:x@127.0.0.1:{port}"
        backend.reset()
        for i in range(6):
            tools.ok("create_task", {"taskId": f"slow-{i}", "name": f"Slow {i}"})
        report = drain_outbox()
    assert not report["success"] and report["applied"] == 0
    assert outbox.batch_size == outbox.BATCH_SIZE // 2
    monkeypatch.setattr(outbox, "batch_size", 2)  # as after several timeouts
    settings.NEO4J_READ_TIMEOUT_SECONDS = 30
    settings.NEOMODEL_DATABASE_URL = live_url
    backend.reset()
    report = drain_outbox()
    assert report["success"] and report["applied"] == 6, report
    assert outbox.batch_size == 8  # 2 -> 4 -> 8: batches of 2 and 4 written
    assert not GraphOutboxEntry.objects.exists()
    assert_graph_equals_postgres()


def test_the_save_path_knows_the_columns_the_outbox_trigger_watches():
    """Graph's outbox trigger on task_contexts fires on the columns the mirror shows; the
    save path (contexts, below graph) restates them to report whether a write queued a graph
    update. The two copies are the trigger's WHEN clause in the database and
    ``MIRRORED_COLUMNS``: they must be the same set."""
    import re

    from django.db import connection

    from contexts.services.write import MIRRORED_COLUMNS

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_triggerdef(t.oid) FROM pg_trigger t "
                       "JOIN pg_class c ON c.oid = t.tgrelid "
                       "WHERE t.tgname = 'graph_outbox_update' AND c.relname = 'task_contexts'")
        (definition,) = cursor.fetchone()
    watched = set(re.findall(r"\bold\.(\w+)", definition, re.I))
    assert watched == set(MIRRORED_COLUMNS), definition


def test_a_sessions_drain_writes_its_session_and_edge_and_nothing_unchanged(
        tools, graph_server, monkeypatch):
    """A work entry writes its WORKS_ON edge and its task's session HANDLES edges, not
    the Session and Task nodes (their own entries, queued first, write those), and an
    edge Postgres still backs is left as it is, not deleted and written again."""
    tools.ok("create_task", {"taskId": "w1", "name": "W1", "agentType": "backend"})
    tools.ok("start_session", {"sessionId": "ws1", "taskId": "w1", "agentId": "claude-a"})
    handles = "MATCH (:Agent)-[h:HANDLES]->(:Task {taskId: 'w1'}) RETURN id(h) ORDER BY id(h)"
    edges = backend.cypher(handles)
    assert len(edges) == 2  # agentType backend, session claude-a
    sent: list[str] = []
    write = backend.write
    monkeypatch.setattr(backend, "write", lambda statements: (
        sent.extend(query for query, _ in statements), write(statements))[1])
    # Drained as the call commits (GRAPH_OUTBOX_DELAY_MS=0 here): its session and work.
    tools.ok("start_session", {"sessionId": "ws2", "taskId": "w1", "agentId": "claude-a"})
    assert not GraphOutboxEntry.objects.exists()
    assert not any("(t:Task {taskId: p.taskId})" in query for query in sent), sent
    assert len(sent) == 2, sent  # the Session with its WORKS_ON, the HANDLES edges
    assert backend.cypher(handles) == edges
    assert backend.cypher("MATCH (s:Session)-[:WORKS_ON]->(:Task {taskId: 'w1'}) "
                          "RETURN s.sessionId ORDER BY s.sessionId") == [["ws1"], ["ws2"]]
    assert_graph_equals_postgres()
