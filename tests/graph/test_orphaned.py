"""Orphaned work (seed 004): an unfinished task whose only sessions crashed, flagged alike by
both graph backends and reported by check_recovery with its resume prompt."""

from __future__ import annotations

import pytest

from graph.services.sync import sync_graph
from sessions.services import recovery
from tests.sessions.helpers import backdate, conforms


def _crash(*session_ids: str) -> None:
    for session_id in session_ids:
        backdate(session_id, 10)
    recovery.detect_crashed_sessions()


@pytest.fixture
def sessions_on_tasks(graph, tools):
    """orphan: its one session crashed. shared: one crashed, one live. done: completed,
    crashed. mended: crashed then marked recovered. idle: never worked on."""
    for task_id, status in [("orphan", "in_progress"), ("shared", "in_progress"),
                            ("done", "completed"), ("mended", "in_progress"),
                            ("idle", "pending")]:
        graph.task(task_id, status)
    for session_id, task_id in [("a", "orphan"), ("b", "shared"), ("c", "shared"),
                                ("d", "done"), ("e", "mended")]:
        tools.ok("start_session", {"sessionId": session_id, "taskId": task_id,
                                   "projectDir": "/repo"})
    _crash("a", "b", "d", "e")
    recovery.mark_recovered("e")
    if graph.backend == "neo4j":
        sync_graph()  # a test transaction never commits, so the mirror is synced by hand
    return graph


def test_get_task_graph_flags_orphaned_tasks_on_both_backends(sessions_on_tasks):
    body = sessions_on_tasks.read(includeCompleted=True)
    flagged = {n["taskId"] for n in body["nodes"] if n.get("orphaned")}
    assert flagged == {"orphan"}
    assert all(n["orphaned"] is True for n in body["nodes"] if "orphaned" in n)
    # (The overview's metadata.depth is null, which its schema does not allow yet: issue
    # 10 item 5 fixes that; the focused answer shows the node schema takes the flag.)
    focused = conforms("get_task_graph", sessions_on_tasks.read(taskId="orphan", depth=1))
    assert [n.get("orphaned") for n in focused["nodes"]] == [True]


def test_check_recovery_reports_orphaned_tasks_and_says_so_in_the_prompt(sessions_on_tasks,
                                                                        tools):
    report = conforms("check_recovery", tools.ok("check_recovery", {"projectDir": "/repo"}))
    assert [(t["taskId"], t["name"], t["crashedSessionId"]) for t in report["orphanedTasks"]] \
        == [("orphan", "Task orphan", "a")]
    assert report["orphanedTasks"][0]["lastActivity"]
    prompts = {s["sessionId"]: s["resumePrompt"] for s in report["sessions"]}
    assert "Orphaned work: `orphan` (Task orphan)" in prompts["a"]
    assert "Orphaned work" not in prompts["b"]
    assert tools.ok("check_recovery", {"projectDir": "/other"})["orphanedTasks"] == []
    # A new session taking the task over ends the orphaning.
    started = tools.ok("start_session", {"sessionId": "f", "taskId": "orphan",
                                         "projectDir": "/repo"})
    assert conforms("start_session", started)["recovery"]["orphanedTasks"] == []


def test_both_backends_give_the_same_whole_answer(graph_server, db, tools, settings):
    from graph import services

    for task_id in ("orphan", "shared", "idle"):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "status": "in_progress"})
    tools.ok("add_task_relationship", {"sourceTaskId": "orphan", "targetTaskId": "shared",
                                       "relationshipType": "blocks"})
    for session_id, task_id in [("a", "orphan"), ("b", "shared"), ("c", "shared")]:
        tools.ok("start_session", {"sessionId": session_id, "taskId": task_id})
    _crash("a", "b")
    sync_graph()
    answers = []
    for enabled in (True, False):
        settings.ENABLE_NEO4J = enabled
        body = services.get_task_graph()
        assert body["metadata"]["source"] == ("neo4j" if enabled else "postgres")
        del body["metadata"]
        answers.append(body)
    assert answers[0] == answers[1]
    assert [n["taskId"] for n in answers[0]["nodes"] if n.get("orphaned")] == ["orphan"]
