"""The same questions asked of the Bolt mirror and of Postgres give the same answers."""

from __future__ import annotations

from decimal import Decimal

import pytest

from contexts.models import TaskContext
from graph import backend, services
from graph.models import TaskRelationship
from graph.services.sync import sync_graph


def answers(settings, **args):
    settings.ENABLE_NEO4J = True
    from_graph = services.get_task_graph(**args)
    settings.ENABLE_NEO4J = False
    from_postgres = services.get_task_graph(**args)
    assert from_graph["metadata"]["source"] == "neo4j", from_graph["metadata"]
    assert from_postgres["metadata"]["source"] == "postgres"
    for result in (from_graph, from_postgres):
        del result["metadata"]
    return from_graph, from_postgres


@pytest.fixture
def mixed(graph_server, db):
    """25 tasks of every status and 30 edges of every type, mirrored by sync_graph."""
    statuses = ["pending", "in_progress", "completed", "blocked", "archived"]
    TaskContext.objects.bulk_create(
        TaskContext(task_id=f"t{i:02}", name=f"Task {i}", status=statuses[i % 5],
                    priority=(i * 37) % 100, current_phase=f"phase-{i % 3}",
                    score=Decimal(i) * Decimal("1.5"), agent_type="backend" if i % 4 else None)
        for i in range(25))
    rows = [TaskRelationship(source_task_id=f"t{i:02}", target_task_id=f"t{i + 1:02}",
                             relationship_type="blocks" if i % 2 else "depends_on",
                             metadata={"reason": f"r{i}"} if i % 2 else {},
                             strength=None if i % 2 else Decimal("0.25"))
            for i in range(24)]
    rows += [TaskRelationship(source_task_id=f"t{i:02}", target_task_id=f"t{i + 5:02}",
                              relationship_type=["related_to", "parent_of"][i % 8 // 4],
                              metadata={})
             for i in range(0, 20, 4)]
    rows.append(TaskRelationship(source_task_id="t03", target_task_id="t20",
                                 relationship_type="blocks", metadata={"reason": "late"}))
    TaskRelationship.objects.bulk_create(rows)
    report = sync_graph()
    assert report["tasks"]["created"] == 25 and report["edges"]["created"] == 30, report


@pytest.mark.parametrize("args", [
    {}, {"include_completed": True},
    {"task_id": "t10", "depth": 0}, {"task_id": "t10", "depth": 1},
    {"task_id": "t10", "depth": 3, "include_completed": True},
    {"task_id": "t00", "depth": 10}, {"task_id": "t24", "depth": 2},
])
def test_same_answer(settings, mixed, args):
    from_graph, from_postgres = answers(settings, **args)
    assert from_graph == from_postgres
    assert from_graph["nodes"]


def test_same_relationships_and_blockers(settings, mixed):
    for task_id in ("t00", "t05", "t20", "t21"):
        settings.ENABLE_NEO4J = True
        graph_side = (services.relationships_for(task_id), services.unfinished_blockers(task_id))
        settings.ENABLE_NEO4J = False
        assert graph_side == (services.relationships_for(task_id),
                              services.unfinished_blockers(task_id))


def test_the_context_read_lists_the_same_relationships(settings, mixed):
    """get_unified_context reads direct relationships from task_relationships in its one
    query: the same lists the graph service answers, from either backend."""
    from contexts.services.unified import get_unified_context

    for task_id in [f"t{i:02}" for i in range(25)]:
        settings.ENABLE_NEO4J = True
        from_graph = services.relationships_for(task_id)
        in_context = get_unified_context(task_id)["relationships"]
        settings.ENABLE_NEO4J = False
        assert in_context == from_graph == services.relationships_for(task_id), task_id
        assert get_unified_context(task_id)["relationships"] == in_context


def test_same_agents_and_recent_sessions(settings, graph_server, tools,
                                         django_capture_on_commit_callbacks):
    """Who worked on a task comes from agent_sessions_sessionwork on both backends: starts with a
    task, switches with a session, a heartbeat moving to another task, and removed
    sessions dropping out; sync_graph rebuilds the graph's side from it."""
    from datetime import timedelta

    from django.utils import timezone

    from sessions.models import ActiveSession, SessionWork
    from sessions.services.recovery import remove_sessions

    def run(tool, args):
        with django_capture_on_commit_callbacks(execute=True):
            return tools.ok(tool, args)

    run("create_task", {"taskId": "w1", "name": "W1", "agentType": "backend"})
    run("create_task", {"taskId": "w2", "name": "W2"})
    run("start_session", {"sessionId": "s1", "taskId": "w1", "agentId": "claude-a"})
    run("start_session", {"sessionId": "s2", "agentId": "claude-b"})
    run("switch_task", {"fromTaskId": "w1", "toTaskId": "w2", "sessionId": "s2"})
    run("start_session", {"sessionId": "s3", "taskId": "w2", "agentId": "claude-c"})
    run("heartbeat", {"sessionId": "s3", "taskId": "w1"})
    run("end_session", {"sessionId": "s1"})
    ActiveSession.objects.filter(session_id="s1").update(
        ended_at=timezone.now() - timedelta(hours=settings.STALE_SESSION_HOURS + 1))
    # The stale sweep deletes nothing any more; removing a session with its records is
    # retention's (recovery.remove_sessions).
    assert remove_sessions(["s1"]) == ["s1"]

    def focus(task_id):
        from_graph, from_postgres = answers(settings, task_id=task_id, depth=0)
        assert from_graph == from_postgres
        found = from_graph["focus"]
        # One test transaction: every start time is the same now(), so compare as sets.
        return ([a["agentId"] for a in found["agents"]],
                sorted(s["sessionId"] for s in found["recentSessions"]))

    assert focus("w1") == (["backend", "claude-c"], ["s3"])
    assert focus("w2") == (["claude-b", "claude-c"], ["s2", "s3"])
    assert not SessionWork.objects.filter(session_id="s1").exists()

    # A lost graph side is rebuilt from Postgres, start times included.
    backend.cypher("MATCH (s:Session) DETACH DELETE s")
    backend.cypher("MATCH (:Agent)-[h:HANDLES {via: 'session'}]->() DELETE h")
    SessionWork.objects.create(session_id="gone", task_id="w1")  # an orphan is pruned
    settings.ENABLE_NEO4J = True
    report = sync_graph()
    assert report["sessions"]["repaired"] >= 4 and report["sessions"]["deleted"] == 1, report
    assert focus("w1") == (["backend", "claude-c"], ["s3"])
    assert focus("w2") == (["claude-b", "claude-c"], ["s2", "s3"])


def test_ready_waits_for_dependencies_on_both_backends(graph_server, db, tools, settings):
    """Issue 23 item 1: a task is ready when nothing unfinished blocks it and nothing it
    depends on is unfinished. ``source depends_on target``: the source waits for the
    target, never the other way round (dependency_of is stored swapped)."""
    for task_id, status in [("api", "pending"), ("ui", "pending"), ("deploy", "pending"),
                            ("done", "completed"), ("docs", "pending"), ("lib", "in_progress"),
                            ("app", "pending"), ("gate", "pending"), ("base", "pending"),
                            ("top", "pending"), ("old", "archived"), ("keep", "pending")]:
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "status": status})
    for source, target, kind in [("ui", "api", "depends_on"),      # ui waits for api
                                 ("api", "deploy", "dependency_of"),  # deploy waits for api
                                 ("docs", "done", "depends_on"),   # its dependency is done
                                 ("app", "lib", "depends_on"),     # lib is in progress
                                 ("api", "gate", "blocks"),        # gate waits for api
                                 ("top", "base", "depends_on"),    # base waits for nothing
                                 ("keep", "old", "depends_on")]:   # archived is not completed
        tools.ok("add_task_relationship", {"sourceTaskId": source, "targetTaskId": target,
                                           "relationshipType": kind})

    def ready_and_blocked(**args):
        from_graph, from_postgres = answers(settings, **args)
        assert from_graph == from_postgres
        return ({n["taskId"] for n in from_graph["readyTasks"]},
                {n["taskId"] for n in from_graph["blockedTasks"]})

    sync_graph()
    assert ready_and_blocked() == ({"api", "docs", "base"},
                                   {"ui", "deploy", "app", "gate", "top", "keep"})
    # The focus on one task: its neighbourhood answers the same on both backends.
    assert ready_and_blocked(task_id="api", depth=1) == ({"api"}, {"ui", "deploy", "gate"})
    assert ready_and_blocked(task_id="top", depth=1) == ({"base"}, {"top"})

    TaskContext.objects.filter(task_id__in=["api", "lib", "base"]).update(status="completed")
    settings.ENABLE_NEO4J = True  # answers() left it off
    sync_graph()
    assert ready_and_blocked() == ({"ui", "deploy", "docs", "app", "gate", "top"}, {"keep"})
