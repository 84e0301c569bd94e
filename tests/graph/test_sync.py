"""Keeping the mirror in step: signals, switch_task's WORKS_ON, an outage and its repair."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from graph import backend
from tests.conftest import free_port
from tests.graph.conftest import Graph, ids


@pytest.fixture
def live_graph(tools, graph_server, db) -> Graph:
    return Graph(tools, "neo4j")


def task_node(task_id: str) -> list:
    return backend.cypher("MATCH (t:Task {taskId: $id}) "
                          "RETURN t.name, t.status, t.phase, t.priority, t.score", {"id": task_id})


def test_task_nodes_follow_saves(live_graph, tools, django_capture_on_commit_callbacks):
    live_graph.task("a", priority=5)
    assert task_node("a") == [["Task a", "pending", None, 5, None]]
    with django_capture_on_commit_callbacks(execute=True):
        tools.ok("save_context_snapshot", {"taskId": "a", "updates": {
            "status": "in_progress", "currentPhase": "build", "score": 42.5}})
    assert task_node("a") == [["Task a", "in_progress", "build", 5, 42.5]]


def test_switch_task_records_works_on(live_graph, tools, django_capture_on_commit_callbacks):
    live_graph.task("from")
    live_graph.task("to")
    with django_capture_on_commit_callbacks(execute=True):
        tools.ok("start_session", {"sessionId": "s-1", "taskId": "from", "agentId": "claude-1"})
    with django_capture_on_commit_callbacks(execute=True):
        tools.ok("switch_task", {"fromTaskId": "from", "toTaskId": "to", "sessionId": "s-1"})
    works_on = backend.cypher("MATCH (s:Session {sessionId: 's-1'})-[w:WORKS_ON]->(t:Task) "
                              "RETURN t.taskId, w.startedAt IS NOT NULL")
    assert sorted(works_on) == [["from", True], ["to", True]]
    assert live_graph.read(taskId="to")["focus"]["recentSessions"][0]["sessionId"] == "s-1"
    # The session's agent handles every task the session worked on.
    handles = backend.cypher("MATCH (a:Agent)-[:HANDLES]->(t:Task) RETURN a.agentId, t.taskId")
    assert sorted(handles) == [["claude-1", "from"], ["claude-1", "to"]]
    with django_capture_on_commit_callbacks(execute=True):
        tools.ok("end_session", {"sessionId": "s-1"})
    assert backend.cypher("MATCH (s:Session {sessionId: 's-1'}) RETURN s.status") == [["ended"]]


def test_a_crash_sweep_marks_its_sessions_in_one_write(live_graph, tools,
                                                       django_capture_on_commit_callbacks):
    from datetime import timedelta

    from django.utils import timezone

    from sessions.models import ActiveSession
    from sessions.services.recovery import detect_crashed_sessions

    for n in range(3):
        with django_capture_on_commit_callbacks(execute=True):
            tools.ok("start_session", {"sessionId": f"sweep-{n}"})
    ActiveSession.objects.filter(session_id__startswith="sweep-").update(
        last_heartbeat=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        assert sorted(detect_crashed_sessions()) == ["sweep-0", "sweep-1", "sweep-2"]
    statuses = backend.cypher("MATCH (s:Session) RETURN s.sessionId, s.status ORDER BY s.sessionId")
    assert statuses == [[f"sweep-{n}", "crashed"] for n in range(3)]


def test_outage_falls_back_then_sync_graph_repairs(live_graph, settings, tools):
    live_graph.task("a")
    live_graph.task("b")
    live_url = settings.NEOMODEL_DATABASE_URL
    settings.NEOMODEL_DATABASE_URL = f"bolt://root:x@127.0.0.1:{free_port()}"  # nothing listens
    backend.reset()

    read = tools.ok("get_task_graph", {"taskId": "a"})
    assert read["metadata"]["source"] == "postgres" and read["metadata"]["fallback"] is True
    assert read["metadata"]["reason"]
    written = tools.ok("add_task_relationship", {
        "sourceTaskId": "a", "targetTaskId": "b", "relationshipType": "blocks"})
    assert written["created"] is True
    assert written["graphSynced"] is False and written["graph"] == "failed"
    # The breaker is open now: later reads skip the dead server at once.
    assert not backend.available()
    assert ids(tools.ok("get_task_graph", {})["blockedTasks"]) == ["b"]
    failed = io.StringIO()
    with pytest.raises(CommandError):
        call_command("sync_graph", stdout=failed)
    assert "sync_graph failed" in failed.getvalue()

    settings.NEOMODEL_DATABASE_URL = live_url
    backend.reset()
    assert backend.cypher("MATCH ()-[e:BLOCKS]->() RETURN count(e)") == [[0]]
    out = io.StringIO()
    call_command("sync_graph", stdout=out)
    assert "edges: created 1" in out.getvalue()
    assert live_graph.read(taskId="a")["edges"] == [{"from": "a", "to": "b", "type": "blocks"}]


def test_sync_graph_removes_what_postgres_no_longer_has(live_graph):
    from graph.services.sync import sync_graph

    live_graph.task("a")
    backend.cypher("CREATE (:Task {taskId: 'ghost', name: 'g', status: 'pending'})")
    backend.cypher("MATCH (t:Task {taskId: 'a'}) SET t.status = 'completed'")
    report = sync_graph()
    assert report["tasks"] == {"created": 0, "updated": 1, "deleted": 1}
    assert sync_graph()["tasks"] == {"created": 0, "updated": 0, "deleted": 0}
    assert backend.cypher("MATCH (t:Task) RETURN t.taskId, t.status") == [["a", "pending"]]


def test_receivers_never_raise(live_graph, settings):
    """A receiver's drain that meets a dead graph server keeps the queue and raises nothing."""
    from contexts.signals import task_changed
    from graph.services.outbox import pending_count
    from sessions.signals import session_started

    settings.NEOMODEL_DATABASE_URL = f"bolt://root:x@127.0.0.1:{free_port()}"
    backend.reset()
    live_graph.task("a")  # queued while the server is down: the drains have work to fail on
    queued = pending_count()
    assert queued > 0
    for send in (lambda: task_changed.send(sender=None, task_id="a", change_type="manual"),
                 lambda: session_started.send(sender=None, session_id="s", task_id="a",
                                              agent_id="x", started_at=None)):
        backend.reset()  # closed, so this receiver's drain goes to the dead server
        send()
        assert not backend.available()  # it did go there, and failed ...
        assert pending_count() == queued  # ... keeping every change for the next drain


def test_beats_sync_repairs_when_counts_differ_and_in_full_when_due(live_graph, settings,
                                                                     tools):
    """Beat's run compares counts of every kind first: equal counts (give or take the
    changes still queued in the outbox) make no full pass until
    GRAPH_FULL_SYNC_INTERVAL_SECONDS since the last one; a count that differs does."""
    from foundation.core.models import JobRun
    from graph.services.outbox import drain_outbox
    from graph.tasks import sync_graph_task

    live_graph.task("a", agentType="backend")
    live_graph.task("b")
    live_graph.relate("a", "b", "blocks")
    tools.ok("start_session", {"sessionId": "s-1", "taskId": "a", "agentId": "claude"})
    drain_outbox()
    # The first run on record: the counts agree, so the full pass waits for its period.
    checked = sync_graph_task()
    assert checked["graph"] == "checked", checked
    assert {kind: pair["graph"] for kind, pair in checked["counts"].items()} == {
        "tasks": 2, "sessions": 1, "worksOn": 1, "edges": 1, "agentTypes": 1,
        "sessionAgents": 1, "inFlight": 0}
    assert all(pair["postgres"] == pair["graph"] for pair in checked["counts"].values())

    # A change still queued is no drift: the mirror lags by what the outbox holds.
    tools.ok("start_session", {"sessionId": "s-2", "taskId": "b", "agentId": "claude"})
    lagging = sync_graph_task()
    assert lagging["graph"] == "checked", lagging
    assert lagging["counts"]["sessions"] == {"postgres": 2, "graph": 1}
    assert lagging["counts"]["inFlight"]["postgres"] >= 1
    drain_outbox()

    # A graph server that lost the sessions: the counts differ, the full pass runs now.
    backend.cypher("MATCH (s:Session) DETACH DELETE s")
    backend.cypher("MATCH (:Agent)-[h:HANDLES {via: 'session'}]->(:Task) DELETE h")
    lost = sync_graph_task()
    assert lost["graph"] == "synced", lost
    assert lost["reason"] == "counts differ: sessionAgents, sessions, worksOn"
    assert sync_graph_task()["graph"] == "checked"

    # A property that drifted leaves every count right: it waits for the full pass.
    backend.cypher("MATCH (t:Task {taskId: 'b'}) SET t.status = 'completed'")
    assert sync_graph_task()["graph"] == "checked"
    settings.GRAPH_FULL_SYNC_INTERVAL_SECONDS = 0
    due = sync_graph_task()
    assert (due["graph"], due["reason"]) == ("synced", "full pass due")
    assert due["tasks"]["updated"] == 1
    assert task_node("b")[0][1] == "pending"
    summaries = list(JobRun.objects.filter(job_name="graph sync").order_by("id")
                     .values_list("summary", flat=True))
    assert summaries == ["graph checked", "graph checked",
                         "graph synced: counts differ: sessionAgents, sessions, worksOn",
                         "graph checked", "graph checked", "graph synced: full pass due"]
    # The clock runs from the last full pass, beat's or the command's.
    settings.GRAPH_FULL_SYNC_INTERVAL_SECONDS = 3600
    assert sync_graph_task()["graph"] == "checked"
