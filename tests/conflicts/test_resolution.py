"""resolve_conflict (spec 4.1.7): every action's side effect, statuses, errors, races."""

from __future__ import annotations

import json
import threading
import uuid

import pytest
from django.db import connection

from conflicts.models import ContextConflict
from conflicts.services import resolution
from contexts.models import ContextVersion, TaskContext
from contexts.services import cache
from contexts.services.save import save_task_changes
from foundation.backends import files, redis_store
from foundation.core.errors import OrchestratorError
from locks import services as locks
from tests.locks.conftest import write_lock


def only(tools, conflict_type, **payload):
    result = tools.ok("detect_conflicts", {"conflictTypes": [conflict_type], **payload})
    [conflict] = result["detected"]
    return conflict


@pytest.fixture
def resolve(tools, django_capture_on_commit_callbacks):
    """Call resolve_conflict; the after-commit publication runs as it would in production."""
    def call(conflict_id, action, **extra):
        resolution_body = {"action": action, **{k: v for k, v in extra.items()
                                                if k in ("resolvedValue", "notes")}}
        payload = {"conflictId": conflict_id, "resolution": resolution_body,
                   **{k: v for k, v in extra.items() if k in ("resolvedBy", "sessionId")}}
        with django_capture_on_commit_callbacks(execute=True):
            return tools.call("resolve_conflict", payload)
    return call


def key_files(task_id):
    return TaskContext.objects.get(task_id=task_id).key_files


@pytest.fixture
def file_conflict(tools, make_task):
    make_task("a", keyFiles=["shared1", "shared2", "a1"])
    make_task("b", keyFiles=["b1", "shared2", "shared1"])
    return only(tools, "file_conflict")


def test_file_conflict_use_a_removes_shared_files_from_b(tools, file_conflict, resolve):
    body = resolve(file_conflict["id"], "use_a", resolvedBy="alice",
                   notes="a owns them").body
    assert body["success"] and (body["previousStatus"], body["newStatus"]) == (
        "unresolved", "resolved")
    assert body["resolution"] == {"action": "use_a", "notes": "a owns them"}
    assert key_files("a") == ["shared1", "shared2", "a1"] and key_files("b") == ["b1"]
    version = ContextVersion.objects.filter(task_id="b").order_by("-version").first()
    assert version.change_summary == (
        f"Resolved conflict {file_conflict['id']} (file_conflict, use_a)")
    assert version.created_by == "alice"
    stored = ContextConflict.objects.get(pk=file_conflict["id"])
    assert stored.resolution_status == "resolved" and stored.resolved_by == "alice"
    assert stored.resolved_at is not None and stored.resolution["action"] == "use_a"
    # The cache and file of b were republished after the commit.
    assert redis_store.get_json(cache.task_cache_key("b"))["keyFiles"] == ["b1"]
    assert json.loads(files.task_file("b").read_text())["keyFiles"] == ["b1"]
    # Nothing left to detect.
    assert tools.ok("detect_conflicts", {})["summary"]["newConflicts"] == 0


def test_file_conflict_use_b_removes_shared_files_from_a(tools, file_conflict, resolve):
    assert resolve(file_conflict["id"], "use_b").status == 200
    assert key_files("a") == ["a1"] and key_files("b") == ["b1", "shared2", "shared1"]


@pytest.mark.parametrize("action", ["merge", "custom"])
def test_file_conflict_merge_and_custom_apply_resolved_value(tools, file_conflict, action, resolve):
    value = {"a": {"keyFiles": ["a1", "shared1"]}, "b": {"keyFiles": ["b1", "shared2"]}}
    assert resolve(file_conflict["id"], action, resolvedValue=value).status == 200
    assert key_files("a") == ["a1", "shared1"] and key_files("b") == ["b1", "shared2"]


def test_merge_without_a_usable_value_is_e1644_and_changes_nothing(tools, file_conflict, resolve):
    for value in (None, {"ghost": {"keyFiles": []}}, {"a": {"keyFiles": "not a list"}}):
        response = resolve(file_conflict["id"], "merge", resolvedValue=value)
        assert (response.status, response.error_code) == (422, "E1644"), value
    assert ContextConflict.objects.get(pk=file_conflict["id"]).resolution_status == "unresolved"
    assert key_files("a") == ["shared1", "shared2", "a1"]


def test_ignore_marks_ignored_without_side_effects(tools, file_conflict, resolve):
    body = resolve(file_conflict["id"], "ignore").body
    assert body["newStatus"] == "ignored"
    assert key_files("b") == ["b1", "shared2", "shared1"]
    again = resolve(file_conflict["id"], "use_a")
    assert (again.status, again.error_code) == (409, "E1643")


def test_state_mismatch_use_a_resyncs_cache_and_use_b_writes_it_to_postgres(tools, make_task, resolve):
    make_task("t1", currentPhase="design")
    make_task("t2", currentPhase="build")
    for task_id in ("t1", "t2"):
        key = cache.task_cache_key(task_id)
        cached = redis_store.get_json(key)
        # A newer-looking cached copy: the resync must replace it all the same.
        redis_store.set_json(key, {**cached, "currentPhase": "from cache",
                                   "version": 99}, 600)
    conflicts = tools.ok("detect_conflicts", {"conflictTypes": ["state_mismatch"]})["detected"]
    by_task = {c["taskAId"]: c["id"] for c in conflicts}
    assert resolve(by_task["t1"], "use_a").status == 200
    assert redis_store.get_json(cache.task_cache_key("t1"))["currentPhase"] == "design"
    assert TaskContext.objects.get(task_id="t1").current_phase == "design"
    assert resolve(by_task["t2"], "use_b").status == 200
    assert TaskContext.objects.get(task_id="t2").current_phase == "from cache"
    cached = redis_store.get_json(cache.task_cache_key("t2"))
    assert cached["currentPhase"] == "from cache" and cached["version"] == 2
    assert tools.ok("detect_conflicts", {"conflictTypes": ["state_mismatch"]})[
        "summary"]["newConflicts"] == 0


def test_state_mismatch_use_a_with_redis_down_is_e1644_and_changes_nothing(
        tools, make_task, settings, resolve):
    from tests.conftest import free_port

    make_task("t1", currentPhase="design")
    key = cache.task_cache_key("t1")
    redis_store.set_json(key, {**redis_store.get_json(key), "currentPhase": "x"}, 600)
    conflict = only(tools, "state_mismatch")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = resolve(conflict["id"], "use_a")
    assert (response.status, response.error_code) == (422, "E1644")
    assert response.body["error"]["details"]["cause"]["code"] == "E1650"
    assert ContextConflict.objects.get(pk=conflict["id"]).resolution_status == "unresolved"


def test_lock_collision_is_released_by_resolving_it(tools, make_task, resolve):
    make_task("t1")
    write_lock("t1", "crashed", expires_in=-60)
    conflict = only(tools, "lock_collision")
    body = resolve(conflict["id"], "use_a", resolvedBy="ops").body
    assert body["newStatus"] == "resolved" and "t1: abandoned lock released" in body["effects"]
    assert locks.current_lock("t1") is None


def test_lock_collision_keeps_a_lock_taken_over_meanwhile(tools, make_task, resolve):
    make_task("t1")
    write_lock("t1", "crashed", expires_in=-60)
    conflict = only(tools, "lock_collision")
    locks.acquire_lock("t1", "new-owner")
    assert resolve(conflict["id"], "use_a").status == 200
    assert locks.current_lock("t1")["sessionId"] == "new-owner"


def test_data_inconsistency_use_a_rewrites_file_and_use_b_writes_postgres(tools, make_task, resolve):
    for task_id in ("t1", "t2"):
        make_task(task_id, currentPhase="design")
        path = files.task_file(task_id)
        files.write_json_atomic(path, {**json.loads(path.read_text()),
                                       "currentPhase": "from file", "version": 50})
    conflicts = tools.ok("detect_conflicts",
                         {"conflictTypes": ["data_inconsistency"]})["detected"]
    by_task = {c["taskAId"]: c["id"] for c in conflicts}
    assert resolve(by_task["t1"], "use_a").status == 200
    assert json.loads(files.task_file("t1").read_text())["currentPhase"] == "design"
    assert resolve(by_task["t2"], "use_b").status == 200
    assert TaskContext.objects.get(task_id="t2").current_phase == "from file"
    assert json.loads(files.task_file("t2").read_text())["version"] == 2


def test_version_divergence_use_a_keeps_state_and_custom_applies_value(tools, make_task, resolve):
    make_task("t1")
    for phase in ("one", "two"):
        save_task_changes("t1", {"currentPhase": phase}, change_type="recovery")
    conflict = only(tools, "version_divergence")
    assert resolve(conflict["id"], "use_b").error_code == "E1644"
    body = resolve(conflict["id"], "custom",
                   resolvedValue={"t1": {"currentPhase": "reconciled"}}).body
    assert body["newStatus"] == "resolved"
    assert TaskContext.objects.get(task_id="t1").current_phase == "reconciled"


def test_spec_contradiction_use_a_copies_a_value_to_b(tools, make_task, resolve):
    make_task("a", currentPhase="rest-api")
    make_task("b", currentPhase="graphql-api")
    reported = tools.ok("report_conflict", {
        "taskAId": "a", "taskBId": "b", "description": "API style differs",
        "evidence": {"field": "currentPhase", "expectedValue": "rest-api",
                     "actualValue": "graphql-api", "location": "phase"}})
    assert resolve(reported["conflict"]["id"], "use_a").status == 200
    assert TaskContext.objects.get(task_id="b").current_phase == "rest-api"


def test_resolution_respects_task_locks(tools, file_conflict, resolve):
    tools.ok("acquire_task_lock", {"taskId": "b", "sessionId": "owner"})
    refused = resolve(file_conflict["id"], "use_a", sessionId="intruder")
    assert refused.error_code == "E1644"
    assert refused.body["error"]["details"]["cause"]["code"] == "E1613"
    assert resolve(file_conflict["id"], "use_a", sessionId="owner").status == 200


def test_unknown_and_malformed_ids_are_e1642(tools, resolve):
    for conflict_id in (str(uuid.uuid4()), "not-a-uuid"):
        response = resolve(conflict_id, "ignore")
        assert (response.status, response.error_code) == (404, "E1642")
    assert tools.call("update_conflict_status", {"conflictId": "nope",
                                                 "status": "escalated"}).error_code == "E1642"


def test_investigate_escalate_then_resolve(tools, file_conflict, resolve):
    step = tools.ok("update_conflict_status", {"conflictId": file_conflict["id"],
                                               "status": "investigating", "by": "bob"})
    assert (step["previousStatus"], step["newStatus"]) == ("unresolved", "investigating")
    repeat = tools.call("update_conflict_status", {"conflictId": file_conflict["id"],
                                                   "status": "investigating"})
    assert repeat.error_code == "E1643"
    tools.ok("update_conflict_status", {"conflictId": file_conflict["id"],
                                        "status": "escalated", "notes": "needs a lead"})
    body = resolve(file_conflict["id"], "use_b", resolvedBy="lead").body
    assert (body["previousStatus"], body["newStatus"]) == ("escalated", "resolved")
    stored = ContextConflict.objects.get(pk=file_conflict["id"])
    assert [h["action"] for h in stored.resolution["history"]] == ["investigate", "escalate"]
    late = tools.call("update_conflict_status", {"conflictId": file_conflict["id"],
                                                 "status": "escalated"})
    assert late.error_code == "E1643"


def test_two_concurrent_resolutions_one_wins(transactional_db, make_task):
    suffix = uuid.uuid4().hex[:8]
    a, b = f"a-{suffix}", f"b-{suffix}"
    make_task(a, keyFiles=["s1", "s2"])
    make_task(b, keyFiles=["s1", "s2"])
    from conflicts.services.detection import detect_conflicts

    [conflict] = detect_conflicts([a], ["file_conflict"])["detected"]
    barrier = threading.Barrier(2)
    results: list = [None, None]

    def run(index: int, action: str) -> None:
        try:
            barrier.wait()
            results[index] = resolution.resolve_conflict(
                conflict["id"], {"action": action}, resolved_by=f"r{index}")["newStatus"]
        except OrchestratorError as exc:
            results[index] = exc.code
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(0, "use_a")),
               threading.Thread(target=run, args=(1, "use_b"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(results) == ["E1643", "resolved"], results
    stored = ContextConflict.objects.get(pk=conflict["id"])
    winner = "r0" if results[0] == "resolved" else "r1"
    assert stored.resolved_by == winner
    # Only the winner's side effect happened.
    files_a, files_b = (TaskContext.objects.get(task_id=t).key_files for t in (a, b))
    assert (files_a, files_b) in ((["s1", "s2"], []), ([], ["s1", "s2"]))
