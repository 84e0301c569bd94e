"""switch_task (12.4.2), get_unified_context reads, sync_hot_context, concurrency."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection

from contexts.models import ContextVersion, GlobalContext, TaskContext
from contexts.services import backends
from contexts.services.save import save_task_changes
from orchestrator.backends import files, redis_store
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
    assert "index-writer-registry" in {t.name for t in threading.enumerate()}
    backends.registry_writer.flush()  # nothing left to land in the next test's directory


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


@pytest.mark.django_db
def test_read_path_cache_aside_and_metadata(tools, make_task):
    make_task("rd-1")
    redis_store.delete("context:task:rd-1")
    miss = tools.ok("get_unified_context", {"taskId": "rd-1", "includeRelationships": False})
    assert miss["metadata"]["cacheHit"] is False and miss["metadata"]["source"] == "database"
    hit = tools.ok("get_unified_context", {"taskId": "rd-1", "includeRelationships": False})
    assert hit["metadata"]["cacheHit"] is True and hit["metadata"]["source"] == "cache"
    hybrid = tools.ok("get_unified_context", {"taskId": "rd-1", "includeVersionHistory": True})
    assert hybrid["metadata"]["source"] == "hybrid"
    assert hybrid["versionHistory"][0]["version"] == 1
    assert hybrid["conflicts"] == []
    plain = tools.ok("get_unified_context", {})
    assert plain["metadata"]["source"] == "database" and "task" not in plain
    assert set(plain["global"]) == {"hardRules", "techStack", "keyPaths", "services"}
    missing = tools.call("get_unified_context", {"taskId": "ghost"})
    assert (missing.status, missing.error_code) == (404, "E1610")


@pytest.mark.django_db
def test_global_context_missing_is_e1611(tools):
    GlobalContext.objects.all().delete()
    response = tools.call("get_unified_context", {})
    assert (response.status, response.error_code) == (404, "E1611")


@pytest.mark.django_db
def test_version_history_is_capped(tools, make_task, settings):
    settings.MAX_VERSIONS_LIMIT = 3
    make_task("vh-1")
    for i in range(5):
        save_task_changes("vh-1", {"iteration": i + 1})
    default = tools.ok("get_unified_context", {"taskId": "vh-1", "includeVersionHistory": True})
    assert [v["version"] for v in default["versionHistory"]] == [6, 5, 4]
    assert default["versionHistory"][0]["changeType"] == "manual"


@pytest.mark.django_db
def test_tiers_and_token_budget(tools, make_task):
    make_task("tier-1", technicalDecisions=["d" * 400] * 5)
    for i in range(5):
        save_task_changes("tier-1", {"iteration": i + 1}, change_summary="s" * 200)
    hot = tools.ok("get_unified_context", {"taskId": "tier-1", "depth": "hot",
                                           "includeVersionHistory": True})
    assert "relationships" not in hot and "versionHistory" not in hot and "task" in hot
    warm = tools.ok("get_unified_context", {"taskId": "tier-1", "depth": "warm",
                                            "includeVersionHistory": True})
    assert "relationships" in warm and "versionHistory" not in warm
    full = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True})
    assert full["metadata"]["dropped"] == []
    budget = full["metadata"]["tokenEstimate"] - 50
    cut = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True,
                                           "maxTokens": budget})
    assert cut["metadata"]["dropped"] == ["versionHistory"] and "relationships" in cut
    tiny = tools.ok("get_unified_context", {"taskId": "tier-1", "includeVersionHistory": True,
                                            "maxTokens": 10})
    assert tiny["metadata"]["dropped"] == ["versionHistory", "conflicts", "relationships"]
    assert tiny["task"]["technicalDecisions"]  # HOT is never dropped


@pytest.mark.django_db
def test_sync_hot_context_writes_every_target(tools, make_task, settings):
    make_task("sy-1")
    make_task("sy-2", status="archived")
    tools.ok("switch_task", {"toTaskId": "sy-1"})
    redis_store.run(lambda r: r.flushdb())
    for path in settings.CONTEXT_DIR.rglob("*.json"):
        path.unlink()
    result = tools.ok("sync_hot_context", {})
    assert result["success"] is True and result["errors"] == []
    assert result["synced"] == {"redis": {"hotContext": True, "taskContexts": 1},
                                "files": {"registry": True, "taskContexts": 1,
                                          "hotContext": True}}
    assert redis_store.get_json("context:hot")["taskId"] == "sy-1"
    assert redis_store.get_json("context:task:sy-1")["taskId"] == "sy-1"
    assert files.task_file("sy-1").exists() and not files.task_file("sy-2").exists()
    constants = json.loads((settings.CONTEXT_DIR / "shared" / "project-constants.json")
                           .read_text())
    assert constants["projectId"] == settings.MCP_PROJECT_ID
    assert set(json.loads((settings.CONTEXT_DIR / "_registry.json").read_text())["tasks"]) == {
        "sy-1", "sy-2"}


@pytest.mark.django_db
def test_partial_sync_is_e1653(tools, make_task, settings):
    from tests.conftest import free_port

    make_task("ps-1")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = tools.call("sync_hot_context", {})
    assert (response.status, response.error_code) == (502, "E1653")
    details = response.body["error"]["details"]
    assert details["synced"]["files"]["taskContexts"] == 1
    assert details["errors"] and details["errors"][0].startswith("redis")


@pytest.mark.django_db(transaction=True)
def test_signals_are_sent_after_commit(tools, make_task):
    from contexts import signals

    changed, switched = [], []

    def on_changed(sender, task_id, change_type, **kw):
        changed.append((task_id, change_type))

    def on_switched(sender, session_id, from_task_id, to_task_id, **kw):
        switched.append((session_id, from_task_id, to_task_id))

    signals.task_changed.connect(on_changed)
    signals.task_switched.connect(on_switched)
    try:
        make_task("sig-a")
        make_task("sig-b")
        save_task_changes("sig-a", {"iteration": 3})
        tools.ok("switch_task", {"fromTaskId": "sig-a", "toTaskId": "sig-b",
                                 "sessionId": "s-1"})
    finally:
        signals.task_changed.disconnect(on_changed)
        signals.task_switched.disconnect(on_switched)
    assert ("sig-a", "manual") in changed and ("sig-b", "manual") in changed
    assert ("sig-b", "switch") in changed
    assert switched == [("s-1", "sig-a", "sig-b")]


@pytest.mark.django_db(transaction=True)
def test_eight_threads_saving_one_task_lose_nothing(make_task):
    make_task("race-1", keyFiles=[])
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(5):
                save_task_changes("race-1", {"currentPhase": f"w{n}-{i}",
                                             "iteration": n * 100 + i})
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    versions = list(ContextVersion.objects.filter(task_id="race-1").order_by("version")
                    .values_list("version", flat=True))
    assert versions == list(range(1, 42))
    task = TaskContext.objects.get(task_id="race-1")
    assert task.version == 41
    # The cache holds the final state, never an older one written late.
    assert redis_store.get_json("context:task:race-1")["version"] == 41
    assert json.loads(files.task_file("race-1").read_text())["version"] == 41
