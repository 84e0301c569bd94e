"""Orphaned work has one definition (docs/user-guide/agent-calls.md) and one query
(sessions.services.work): the overview, the task list, check_recovery and get_task_graph
list the same tasks (issue 23 item 2).

The data is what the old definitions disagreed on: the overview once counted every task
in progress with no *active* session, so a task whose session ended normally, one whose
live session was compacted and one whose crash was marked recovered were "orphaned" there
and nowhere else, while a pending task left by a crash was orphaned everywhere else.
"""

from __future__ import annotations

import pytest
from django.urls import reverse

from graph.services.sync import sync_graph
from sessions.services import recovery
from sessions.services.work import orphaned_tasks

# task -> (status, its story); the ones marked True are orphaned work.
CASES = {
    "orphan": ("in_progress", True),        # its one session crashed
    "orphan-pending": ("pending", True),    # unfinished too, though not in progress
    "ended": ("in_progress", False),        # its session ended normally
    "compacted": ("in_progress", False),    # its live session was compacted, never crashed
    "taken": ("in_progress", False),        # crashed, then a live (compacted) one took over
    "done": ("completed", False),           # completed, its session crashed
    "mended": ("in_progress", False),       # crashed, then marked recovered
    "idle": ("in_progress", False),         # never worked on: nobody to be orphaned by
}
ORPHANED = {task for task, (_, orphaned) in CASES.items() if orphaned}


@pytest.fixture
def stories(graph, tools):
    for task_id, (status, _) in CASES.items():
        graph.task(task_id, status)
    for session_id in ("orphan", "orphan-pending", "ended", "compacted", "taken", "done",
                       "mended"):
        tools.ok("start_session", {"sessionId": f"s-{session_id}", "taskId": session_id})
    tools.ok("end_session", {"sessionId": "s-ended"})
    tools.ok("report_compaction", {"sessionId": "s-compacted"})
    for session_id in ("orphan", "orphan-pending", "taken", "done", "mended"):
        recovery.mark_crashed(f"s-{session_id}")
    recovery.mark_recovered("s-mended")
    tools.ok("start_session", {"sessionId": "s-taken-over", "taskId": "taken"})
    tools.ok("report_compaction", {"sessionId": "s-taken-over"})
    # Statuses as seeded (starting a session may move a task along): set them back.
    for task_id, (status, _) in CASES.items():
        graph.status(task_id, status)
    if graph.backend == "neo4j":
        sync_graph()  # a test transaction never commits, so the mirror is synced by hand
    return graph


def test_every_page_lists_the_same_orphaned_tasks(admin_client, tools, stories):
    recovered = tools.ok("check_recovery", {})
    from_recovery = [t["taskId"] for t in recovered["orphanedTasks"]]
    assert set(from_recovery) == ORPHANED and len(from_recovery) == len(ORPHANED)

    overview = admin_client.get(reverse("console_overview")).json()
    assert {t["taskId"] for t in overview["orphanedTasks"]} == ORPHANED
    assert overview["orphanedTaskCount"] == len(ORPHANED)
    # One shape too: the overview names the crashed session as check_recovery does.
    assert {(t["taskId"], t["crashedSessionId"]) for t in overview["orphanedTasks"]} == {
        (t["taskId"], t["crashedSessionId"]) for t in recovered["orphanedTasks"]}
    fragment = admin_client.get(reverse("console_overview_fragment")).content.decode()
    assert f'id="orphaned-count">{len(ORPHANED)}<' in fragment

    tasks = reverse("admin:contexts_taskcontext_changelist")
    listed = admin_client.get(tasks).context["cl"].result_list
    assert {t.task_id for t in listed if t.is_orphaned} == ORPHANED
    only = admin_client.get(tasks, {"orphaned": "yes"}).context["cl"].result_list
    assert {t.task_id for t in only} == ORPHANED

    body = stories.read(includeCompleted=True)
    assert {n["taskId"] for n in body["nodes"] if n.get("orphaned")} == ORPHANED

    assert {row.task_id for row in orphaned_tasks()} == ORPHANED


def test_a_new_live_session_or_the_recovery_mark_ends_it_everywhere(admin_client, tools,
                                                                   stories):
    tools.ok("start_session", {"sessionId": "s-new", "taskId": "orphan"})
    tools.ok("check_recovery", {"markRecovered": "s-orphan-pending"})
    if stories.backend == "neo4j":
        sync_graph()
    assert tools.ok("check_recovery", {})["orphanedTasks"] == []
    assert admin_client.get(reverse("console_overview")).json()["orphanedTaskCount"] == 0
    listed = admin_client.get(reverse("admin:contexts_taskcontext_changelist"))
    assert not any(t.is_orphaned for t in listed.context["cl"].result_list)
    assert not any(n.get("orphaned") for n in stories.read(includeCompleted=True)["nodes"])
