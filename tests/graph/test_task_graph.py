"""get_task_graph (spec 4.1.9) on both backends: nodes, edges, ready and blocked tasks, focus."""

from __future__ import annotations

from datetime import UTC, datetime

from graph import services
from sessions.signals import session_started
from tests.graph.conftest import ids


def chain(graph):
    """a -blocks-> b -blocks-> c, d depends on c, e related to d, f alone."""
    for t in "abcdef":
        graph.task(t, priority=10 * ord(t) % 97)
    graph.relate("a", "b", "blocks", reason="schema first")
    graph.relate("b", "c", "blocks")
    graph.relate("d", "c", "depends_on", strength=0.3)
    graph.relate("e", "d", "related_to")


def test_ready_and_blocked_follow_blockers_and_dependencies_as_they_complete(graph):
    chain(graph)
    body = graph.read()
    # d depends on c (d waits for c): not ready while c is unfinished (issue 23 item 1).
    assert sorted(ids(body["readyTasks"])) == ["a", "e", "f"]
    assert sorted(ids(body["blockedTasks"])) == ["b", "c", "d"]
    graph.status("a", "in_progress")
    assert sorted(ids(graph.read()["readyTasks"])) == ["e", "f"]
    graph.status("a", "completed")
    body = graph.read()
    assert sorted(ids(body["readyTasks"])) == ["b", "e", "f"]
    assert sorted(ids(body["blockedTasks"])) == ["c", "d"]
    assert body["summary"] == {"totalTasks": 6, "inProgress": 0, "blocked": 2,
                               "completed": 1, "pending": 5}
    graph.status("b", "completed")
    body = graph.read()
    assert sorted(ids(body["readyTasks"])) == ["c", "e", "f"]
    assert ids(body["blockedTasks"]) == ["d"]
    assert services.unfinished_blockers("c") == []
    graph.status("c", "completed")
    body = graph.read()
    assert sorted(ids(body["readyTasks"])) == ["d", "e", "f"]
    assert body["blockedTasks"] == []


def test_blocked_status_counts_as_blocked(graph):
    graph.task("x", status="blocked")
    body = graph.read()
    assert ids(body["blockedTasks"]) == ["x"] and body["readyTasks"] == []


def test_ready_tasks_are_ordered_by_priority(graph):
    graph.task("low", priority=1)
    graph.task("high", priority=90)
    graph.task("mid", priority=50)
    assert ids(graph.read()["readyTasks"]) == ["high", "mid", "low"]


def test_depth_limits(graph):
    chain(graph)
    assert ids(graph.read(taskId="a", depth=0)["nodes"]) == ["a"]
    assert sorted(ids(graph.read(taskId="a", depth=1)["nodes"])) == ["a", "b"]
    two = graph.read(taskId="a", depth=2)
    assert sorted(ids(two["nodes"])) == ["a", "b", "c"]
    assert [(e["from"], e["to"]) for e in two["edges"]] == [("a", "b"), ("b", "c")]
    assert sorted(ids(graph.read(taskId="a", depth=4)["nodes"])) == ["a", "b", "c", "d", "e"]
    # readyTasks, blockedTasks and summary cover the same neighbourhood.
    assert ids(two["readyTasks"]) == ["a"]
    assert sorted(ids(two["blockedTasks"])) == ["b", "c"]
    assert two["summary"]["totalTasks"] == 3
    default = graph.read(taskId="a")
    assert default["metadata"]["depth"] == 2 and ids(default["nodes"]) == ids(two["nodes"])


def test_include_completed(graph):
    chain(graph)
    graph.status("b", "completed")
    hidden = graph.read(taskId="a", depth=2)
    assert sorted(ids(hidden["nodes"])) == ["a", "c"]
    assert hidden["edges"] == []
    assert hidden["focus"]["blocks"] == []
    assert hidden["summary"]["completed"] == 1 and hidden["summary"]["totalTasks"] == 3
    shown = graph.read(taskId="a", depth=2, includeCompleted=True)
    assert sorted(ids(shown["nodes"])) == ["a", "b", "c"]
    assert ids(shown["focus"]["blocks"]) == ["b"]
    # The focus task itself is always shown.
    graph.status("a", "completed")
    assert ids(graph.read(taskId="a", depth=0)["nodes"]) == ["a"]


def test_focus(graph):
    chain(graph)
    graph.tools.ok("create_task", {"taskId": "g", "name": "G", "agentType": "backend"})
    from contexts.models import TaskContext
    from contexts.signals import task_changed

    task_changed.send(sender=TaskContext, task_id="g", change_type="manual")
    graph.relate("g", "c", "blocks")
    started = datetime(2026, 1, 2, 3, 4, 5, 600000, tzinfo=UTC)
    graph.tools.ok("start_session", {"sessionId": "sess-1", "taskId": "c"})
    from sessions.models import ActiveSession, SessionWork

    ActiveSession.objects.filter(session_id="sess-1").update(started_at=started)
    SessionWork.objects.filter(session_id="sess-1").update(started_at=started)
    session_started.send(sender=None, session_id="sess-1", task_id="c", agent_id=None,
                         started_at=started)
    focus = graph.read(taskId="c", depth=1)["focus"]
    assert focus["task"]["taskId"] == "c" and focus["task"]["status"] == "pending"
    assert ids(focus["blockedBy"]) == ["b", "g"]
    assert ids(focus["dependencyOf"]) == ["d"]
    assert focus["blocks"] == focus["dependsOn"] == focus["relatedTo"] == []
    assert focus["recentSessions"] == [{"sessionId": "sess-1",
                                        "startedAt": "2026-01-02T03:04:05.600000Z"}]
    assert graph.read(taskId="g", depth=0)["focus"]["agents"] == [
        {"agentId": "backend", "type": "backend"}]
    assert services.relationships_for("c") == {
        "blocks": [], "dependsOn": [], "relatedTo": [],
        "blockedBy": [{"taskId": "b", "name": "Task b", "status": "pending"},
                      {"taskId": "g", "name": "G", "status": "pending"}]}
    assert services.unfinished_blockers("c") == [{"taskId": "b", "name": "Task b"},
                                                 {"taskId": "g", "name": "G"}]


def test_unknown_task(graph):
    response = graph.tools.call("get_task_graph", {"taskId": "nope"})
    assert response.status == 404 and response.error_code == "E1610"
    bad = graph.tools.call("get_task_graph", {"depth": -1})
    assert bad.status == 400 and bad.error_code == "E1612"


def test_empty_graph(graph):
    body = graph.read()
    assert body["nodes"] == body["edges"] == body["readyTasks"] == body["blockedTasks"] == []
    assert "focus" not in body and body["summary"]["totalTasks"] == 0
