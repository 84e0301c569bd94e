"""switch_task (12.4.2): save the current task, activate the next one (hot cache, hot file,
registry), its unfinished blockers; errors and a failed switch change nothing."""

from __future__ import annotations

import json
import threading

import pytest

from contexts.models import GlobalContext, TaskContext
from contexts.services import backends
from foundation.backends import files, redis_store
from tests.waiting import wait_for


@pytest.mark.django_db
def test_task_switching_12_4_2(tools, make_task, settings, django_capture_on_commit_callbacks):
    make_task("task-a", currentPhase="phase-a")
    make_task("task-b", currentPhase="phase-b")
    # The saved source task is published when the switch commits (write_task joins the
    # switch's transaction): run the commit callbacks as a commit would.
    with django_capture_on_commit_callbacks(execute=True):
        result = tools.ok("switch_task", {
            "fromTaskId": "task-a", "toTaskId": "task-b", "saveCurrentState": True,
            "currentTaskUpdates": {"currentPhase": "phase-a-updated"}})
    assert result["previousTask"] == {"taskId": "task-a", "saved": True, "version": 2}
    assert result["newTask"]["taskId"] == "task-b"
    assert result["newTask"]["currentPhase"] == "phase-b"
    assert result["newTask"]["blockedBy"] == []
    task_a = tools.ok("get_unified_context", {"taskId": "task-a"})
    assert task_a["task"]["currentPhase"] == "phase-a-updated"
    assert GlobalContext.objects.get().active_task_id == "task-b"
    assert TaskContext.objects.get(task_id="task-b").last_session_at is not None
    assert redis_store.get_json("context:hot")["taskId"] == "task-b"
    hot_file = json.loads((settings.CONTEXT_DIR / "_hot_context.json").read_text())
    assert hot_file["taskId"] == "task-b"
    registry = json.loads((settings.CONTEXT_DIR / "_registry.json").read_text())
    assert registry["activeTask"] == "task-b" and "task-a" in registry["tasks"]


@pytest.mark.django_db(transaction=True)
def test_the_registry_is_rewritten_off_the_request_path_after_a_burst(tools, make_task,
                                                                       settings):
    """With INDEX_FILE_DELAY_MS set, switches only mark the registry stale; the process's
    writer thread rewrites it once for the burst, with the last active task."""
    settings.INDEX_FILE_DELAY_MS = 100
    for name in ("r-a", "r-b", "r-c"):
        make_task(name)
    path = settings.CONTEXT_DIR / "_registry.json"
    for target in ("r-b", "r-c", "r-a", "r-b"):
        tools.ok("switch_task", {"toTaskId": target})
    wait_for(lambda: (files.read_json(path) or {}).get("activeTask") == "r-b")
    registry = files.read_json(path)
    assert registry["activeTask"] == "r-b"
    assert set(registry["tasks"]) == {"r-a", "r-b", "r-c"}
    assert any(t.name == "index-writer-registry" for t in threading.enumerate())
    backends.registry_writers.flush()  # nothing left to land in the next test's directory


@pytest.mark.django_db
def test_switch_reports_unfinished_blockers(tools, make_task):
    make_task("blk-1", name="Blocker")
    make_task("blk-2", name="Done blocker", status="completed")
    make_task("blk-3")
    for source in ("blk-1", "blk-2"):
        tools.ok("add_task_relationship", {"sourceTaskId": source, "targetTaskId": "blk-3",
                                           "relationshipType": "blocks"})
    result = tools.ok("switch_task", {"toTaskId": "blk-3"})
    assert result["newTask"]["blockedBy"] == [{"taskId": "blk-1", "name": "Blocker"}]
    assert "previousTask" not in result
    relationships = tools.ok("get_unified_context", {"taskId": "blk-3"})["relationships"]
    assert [r["taskId"] for r in relationships["blockedBy"]] == ["blk-1", "blk-2"]


@pytest.mark.django_db
def test_switch_errors_change_nothing(tools, make_task):
    make_task("sw-a", currentPhase="a")
    make_task("sw-b")
    cases = [
        ({"fromTaskId": "ghost", "toTaskId": "sw-b"}, 404, "E1660"),
        ({"fromTaskId": "sw-a", "toTaskId": "ghost",
          "currentTaskUpdates": {"currentPhase": "changed"}}, 404, "E1661"),
        ({"fromTaskId": "sw-a", "toTaskId": "sw-b",
          "currentTaskUpdates": {"iteration": -3}}, 400, "E1612"),
        ({"fromTaskId": "sw-a", "toTaskId": "sw-b",
          "currentTaskUpdates": {"status": "completed"}}, 400, "E1612"),
    ]
    for payload, status, code in cases:
        response = tools.call("switch_task", payload)
        assert (response.status, response.error_code) == (status, code), payload
    task = TaskContext.objects.get(task_id="sw-a")
    assert (task.current_phase, task.version) == ("a", 1)
    assert GlobalContext.objects.get().active_task_id is None


@pytest.mark.django_db
def test_failed_switch_rolls_back_the_source_save(tools, make_task):
    make_task("fs-a", currentPhase="a")
    make_task("fs-b")
    GlobalContext.objects.all().delete()
    response = tools.call("switch_task", {"fromTaskId": "fs-a", "toTaskId": "fs-b",
                                          "currentTaskUpdates": {"currentPhase": "saved?"}})
    assert response.error_code == "E1611"
    task = TaskContext.objects.get(task_id="fs-a")
    assert (task.current_phase, task.version) == ("a", 1)
    assert TaskContext.objects.get(task_id="fs-b").last_session_at is None
