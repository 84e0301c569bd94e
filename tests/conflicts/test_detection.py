"""detect_conflicts (spec 4.1.6, 12.2.2): each method from real Postgres / Redis / file state."""

from __future__ import annotations

import json

import pytest

from conflicts.models import ContextConflict
from conflicts.services.detection import Scope, detect_file_conflicts
from contexts.services import cache
from contexts.services.save import save_task_changes
from foundation.backends import files, redis_store
from tests.conflicts.conftest import detect
from tests.locks.conftest import write_lock


def of_type(result, conflict_type):
    return [c for c in result["detected"] if c["conflictType"] == conflict_type]


def test_spec_example_file_conflict_between_two_tasks(tools, make_task):
    make_task("task-a", keyFiles=["file1.ts", "file2.ts"])
    make_task("task-b", keyFiles=["file2.ts", "file3.ts"])
    result = detect(tools)
    [conflict] = of_type(result, "file_conflict")
    assert conflict["taskAId"] == "task-a" and conflict["taskBId"] == "task-b"
    assert conflict["evidence"]["actualValue"] == ["file2.ts"]
    assert conflict["evidence"]["field"] == "keyFiles"
    assert conflict["suggestedResolution"]


@pytest.mark.parametrize(("shared", "severity", "strength"), [
    (1, "medium", 0.2), (2, "medium", 0.4), (3, "high", 0.6), (5, "high", 1.0),
    (7, "high", 1.0)])
def test_file_conflict_severity_and_strength(tools, make_task, shared, severity, strength):
    common = [f"src/shared{i}.py" for i in range(shared)]
    make_task("a", keyFiles=[*common, "a-only.py"])
    make_task("b", keyFiles=["b-only.py", *reversed(common)])
    [conflict] = of_type(detect(tools, conflictTypes=["file_conflict"]), "file_conflict")
    assert (conflict["severity"], conflict["strength"]) == (severity, strength)
    assert conflict["evidence"]["actualValue"] == sorted(common)
    stored = ContextConflict.objects.get(pk=conflict["id"])
    assert float(stored.strength) == strength and stored.detected_by == "system"


def test_only_active_tasks_conflict_and_task_filter(tools, make_task):
    make_task("a", keyFiles=["x.py"], status="in_progress")
    make_task("b", keyFiles=["x.py"], status="blocked")
    make_task("c", keyFiles=["x.py"], status="completed")
    make_task("d", keyFiles=["x.py"], status="archived")
    make_task("e", keyFiles=["y.py"], status="pending")
    make_task("f", keyFiles=["y.py"], status="pending")
    only_a = detect(tools, taskIds=["a"], conflictTypes=["file_conflict"])
    assert [(c["taskAId"], c["taskBId"]) for c in only_a["detected"]] == [("a", "b")]
    everything = detect(tools, conflictTypes=["file_conflict"])
    assert [(c["taskAId"], c["taskBId"]) for c in everything["detected"]] == [("e", "f")]
    assert [(c["taskAId"], c["taskBId"]) for c in everything["existing"]] == [("a", "b")]


def test_detection_among_given_tasks_pairs_only_those(make_task):
    """A claim's overlap asks about its pairs only: the other tasks sharing the file make
    no pair, and the pairs asked about are what a whole-project run finds for them."""
    make_task("a", keyFiles=["x.py", "y.py", "a.py"])
    make_task("b", keyFiles=["y.py", "x.py"])
    make_task("c", keyFiles=["x.py"])
    make_task("d", keyFiles=["y.py"])
    whole = detect_file_conflicts(Scope(["a"], None))
    among = detect_file_conflicts(Scope(["a"], None), among=["a", "b"])
    assert sorted((c.task_a_id, c.task_b_id) for c in whole) == [("a", "b"), ("a", "c"),
                                                                 ("a", "d")]
    assert among == [c for c in whole if (c.task_a_id, c.task_b_id) == ("a", "b")]
    assert among[0].evidence["actualValue"] == ["x.py", "y.py"]


def test_redetection_lands_in_existing_and_is_never_stored_twice(tools, make_task):
    make_task("a", keyFiles=["1", "2", "3"])
    make_task("b", keyFiles=["1", "2", "3"])
    first = detect(tools)
    assert first["summary"] == {"newConflicts": 1, "existingConflicts": 0,
                                "criticalCount": 0, "highCount": 1}
    second = detect(tools)
    assert second["detected"] == []
    assert [c["id"] for c in second["existing"]] == [first["detected"][0]["id"]]
    assert second["summary"] == {"newConflicts": 0, "existingConflicts": 1,
                                 "criticalCount": 0, "highCount": 1}
    assert ContextConflict.objects.count() == 1
    # Different evidence (one more shared file) is a different conflict, which supersedes
    # the first (tests/conflicts/test_auto_close.py).
    save_task_changes("b", {"keyFiles": ["1", "2", "3", "4"]})
    save_task_changes("a", {"keyFiles": ["1", "2", "3", "4"]})
    third = detect(tools)
    assert len(third["detected"]) == 1 and third["existing"] == []
    # An ignored conflict stays ignored: not stored again, not listed.
    tools.ok("resolve_conflict", {"conflictId": third["detected"][0]["id"],
                                  "resolution": {"action": "ignore"}})
    fourth = detect(tools)
    assert fourth["detected"] == [] and fourth["existing"] == []
    assert ContextConflict.objects.count() == 2


def test_a_file_shared_by_many_tasks_is_stored_in_batches(tools, make_task, monkeypatch):
    """Thousands of pairs from one file: every pair stored once, over several INSERTs."""
    from conflicts.services import store

    monkeypatch.setattr(store, "STORE_BATCH", 100)  # 45 batches instead of one
    for n in range(96):
        make_task(f"crowd-{n:02d}", keyFiles=["src/settings.py", f"src/own{n}.py"])
    first = detect(tools, conflictTypes=["file_conflict"])
    pairs = 96 * 95 // 2
    assert first["summary"]["newConflicts"] == pairs == len(first["detected"])
    assert len({(c["taskAId"], c["taskBId"]) for c in first["detected"]}) == pairs
    second = detect(tools, conflictTypes=["file_conflict"])
    assert second["detected"] == [] and len(second["existing"]) == pairs
    assert ContextConflict.objects.count() == pairs


def test_lock_collision_from_an_expired_lock(tools, make_task):
    make_task("t1")
    make_task("t2")
    stale = write_lock("t1", "crashed-session", expires_in=-60)
    write_lock("t2", "live-session", expires_in=300)
    result = detect(tools, conflictTypes=["lock_collision"])
    [conflict] = result["detected"]
    assert conflict["taskAId"] == "t1" and "taskBId" not in conflict
    assert (conflict["severity"], conflict["strength"]) == ("high", 1.0)
    assert conflict["evidence"]["actualValue"] == stale
    assert conflict["evidence"]["location"] == "redis:context:lock:t1"


def test_state_mismatch_between_redis_cache_and_postgres(tools, make_task):
    make_task("t1", currentPhase="design", keyFiles=["a.py"])
    make_task("t2", currentPhase="build")
    key = cache.task_cache_key("t1")
    cached = redis_store.get_json(key)
    assert cached is not None, "create_task caches the task"
    assert detect(tools, conflictTypes=["state_mismatch"])["detected"] == []
    cached.update(currentPhase="stale phase", keyFiles=["a.py", "b.py"])
    redis_store.set_json(key, cached, 600)
    [conflict] = detect(tools, conflictTypes=["state_mismatch"])["detected"]
    assert conflict["taskAId"] == "t1"
    assert (conflict["severity"], conflict["strength"]) == ("medium", 0.8)
    evidence = conflict["evidence"]
    assert evidence["field"] == "currentPhase,keyFiles"
    assert evidence["expectedValue"] == {"currentPhase": "design", "keyFiles": ["a.py"]}
    assert evidence["actualValue"] == {"currentPhase": "stale phase",
                                       "keyFiles": ["a.py", "b.py"]}


def test_version_divergence_from_recovery_versions(tools, make_task):
    make_task("t1")
    make_task("t2")
    save_task_changes("t1", {"currentPhase": "recovered once"}, change_type="recovery")
    save_task_changes("t2", {"currentPhase": "recovered once"}, change_type="recovery")
    assert detect(tools, conflictTypes=["version_divergence"])["detected"] == []
    save_task_changes("t1", {"currentPhase": "recovered twice"}, change_type="recovery")
    [conflict] = detect(tools, conflictTypes=["version_divergence"])["detected"]
    assert conflict["taskAId"] == "t1" and conflict["evidence"]["actualValue"] == [2, 3]
    assert (conflict["severity"], conflict["strength"]) == ("low", 0.5)


def test_data_inconsistency_between_file_backup_and_postgres(tools, make_task):
    make_task("t1", currentPhase="design")
    path = files.task_file("t1")
    assert path.exists()
    assert detect(tools, conflictTypes=["data_inconsistency"])["detected"] == []
    backup = json.loads(path.read_text())
    backup["currentPhase"] = "edited by hand"
    files.write_json_atomic(path, backup)
    [conflict] = detect(tools, conflictTypes=["data_inconsistency"])["detected"]
    assert conflict["evidence"]["actualValue"] == {"currentPhase": "edited by hand"}
    assert conflict["evidence"]["location"] == "file:task-agents/t1.json"


def test_unknown_type_is_e1641(tools):
    response = tools.call("detect_conflicts", {"conflictTypes": ["file_conflict", "bogus"]})
    assert (response.status, response.error_code) == (400, "E1641")


def test_failed_detection_query_is_e1640(tools, settings):
    settings.MCP_SCHEMA = "no_such_schema"
    response = tools.call("detect_conflicts", {"conflictTypes": ["file_conflict"]})
    assert (response.status, response.error_code) == (500, "E1640")


def test_redis_outage_skips_redis_methods(tools, make_task, settings):
    from tests.conftest import free_port

    make_task("a", keyFiles=["x"])
    make_task("b", keyFiles=["x"])
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    result = detect(tools)
    assert len(result["detected"]) == 1
    assert {s["conflictType"] for s in result["skipped"]} == {"lock_collision",
                                                             "state_mismatch"}


def test_unreadable_file_root_skips_the_file_method(tools, make_task, settings, tmp_path):
    """Found by the output-schema conformance run: this was an E1699 server fault."""
    make_task("a", keyFiles=["x"])
    make_task("b", keyFiles=["x"])
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where a directory should be")
    settings.CONTEXT_DIR = blocker / "contexts"
    result = detect(tools)
    assert len(result["detected"]) == 1
    assert [s["conflictType"] for s in result["skipped"]] == ["data_inconsistency"]
    assert result["skipped"][0]["reason"].startswith("files: ")
