"""Conflicts nobody has to resolve any more close themselves (issue 23, item 6): detection
resolves open conflicts whose evidence no longer holds as "auto: evidence gone", and a new
file_conflict supersedes the pair's older ones whose paths it all lists. Each closing is a
resolution: status, resolved_by, resolution record (history kept), log line, metric."""

from __future__ import annotations

import json
import logging

import pytest
from prometheus_client import REGISTRY

from conflicts.models import ContextConflict
from conflicts.services.detection import Scope, detect_file_conflicts
from conflicts.services.store import store_candidates
from contexts.models import TaskContext
from contexts.services import cache
from contexts.services.save import save_task_changes
from foundation.backends import files, redis_store
from locks import services as locks
from tests.conflicts.conftest import detect
from tests.locks.conftest import write_lock

pytestmark = pytest.mark.django_db

RESOLVED = "session_orchestration_conflicts_resolved_total"


def resolved_count(action: str) -> float:
    return REGISTRY.get_sample_value(RESOLVED, {"action": action}) or 0.0


def files_conflict(tools, **payload):
    return detect(tools, conflictTypes=["file_conflict"], **payload)


def open_conflicts(**filters):
    return list(ContextConflict.objects.filter(
        resolution_status__in=("unresolved", "investigating", "escalated"), **filters))


def test_growing_overlap_is_one_open_conflict_per_pair(tools, make_task, caplog):
    """1, 2, then 3 shared files: each new conflict supersedes the one before."""
    make_task("a", keyFiles=["1.py", "a.py"])
    make_task("b", keyFiles=["1.py", "b.py"])
    [first] = files_conflict(tools)["detected"]
    before = resolved_count("auto_superseded")
    save_task_changes("a", {"keyFiles": ["1.py", "2.py"]})
    save_task_changes("b", {"keyFiles": ["1.py", "2.py"]})
    [second] = files_conflict(tools)["detected"]
    save_task_changes("a", {"keyFiles": ["1.py", "2.py", "3.py"]})
    save_task_changes("b", {"keyFiles": ["1.py", "2.py", "3.py"]})
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="orchestrator.conflicts"):
        third = files_conflict(tools)
    [newest] = third["detected"]
    assert third["existing"] == []
    assert [c.pk for c in open_conflicts()] == [ContextConflict.objects.get(pk=newest["id"]).pk]
    assert resolved_count("auto_superseded") == before + 2
    for old, by in ((first, second), (second, newest)):
        row = ContextConflict.objects.get(pk=old["id"])
        assert row.resolution_status == "resolved" and row.resolved_at is not None
        assert row.resolved_by == f"auto: superseded by {by['id']}"
        assert row.resolution["action"] == "auto_superseded"
        assert row.resolution["supersededBy"] == by["id"]
        assert row.resolution["notes"].startswith(f"auto: superseded by {by['id']}: ")
    [line] = [r for r in caplog.records if r.getMessage() == "Conflict resolved"]
    assert (line.conflictId, line.action, line.resolvedBy) == (
        second["id"], "auto_superseded", f"auto: superseded by {newest['id']}")
    # The HOT context names the pair's conflict once.
    hot = tools.ok("get_unified_context", {"taskId": "a"})["conflicts"]
    assert [c["id"] for c in hot] == [newest["id"]]


def test_storing_supersedes_whoever_stores(tools, make_task):
    """File claims store through detect_file_conflicts + store_candidates, like this."""
    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["x.py"])
    [old] = store_candidates(detect_file_conflicts(Scope(["a"], None)), detected_by="claims:s1")
    save_task_changes("a", {"keyFiles": ["x.py", "y.py"]})
    save_task_changes("b", {"keyFiles": ["x.py", "y.py"]})
    [new] = store_candidates(detect_file_conflicts(Scope(["a"], None)), detected_by="claims:s2")
    old.refresh_from_db()
    assert (old.resolution_status, old.resolved_by) == ("resolved",
                                                        f"auto: superseded by {new.pk}")
    assert [c.pk for c in open_conflicts()] == [new.pk]


def test_a_resolution_removing_the_shared_file_closes_the_other_conflict(tools, make_task,
                                                                         caplog):
    """The issue's case: use_a on (a, b) drops x.py from b; (b, c) was about x.py only."""
    for task_id in ("a", "b", "c"):
        make_task(task_id, keyFiles=["x.py", f"{task_id}.py"])
    found = {(c["taskAId"], c["taskBId"]): c["id"] for c in files_conflict(tools)["detected"]}
    assert set(found) == {("a", "b"), ("a", "c"), ("b", "c")}
    tools.ok("resolve_conflict", {"conflictId": found[("a", "b")],
                                  "resolution": {"action": "use_a"}})
    assert "x.py" not in TaskContext.objects.get(task_id="b").key_files
    before = resolved_count("auto_evidence_gone")
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="orchestrator.conflicts"):
        result = detect(tools)
    [closed] = result["closed"]
    assert (closed["id"], closed["resolvedBy"]) == (found[("b", "c")], "auto: evidence gone")
    assert closed["notes"] == "auto: evidence gone: tasks b and c no longer share x.py"
    row = ContextConflict.objects.get(pk=found[("b", "c")])
    assert (row.resolution_status, row.resolved_by) == ("resolved", "auto: evidence gone")
    assert row.resolution == {"action": "auto_evidence_gone", "effects": [],
                              "notes": "auto: evidence gone: tasks b and c no longer share x.py"}
    assert resolved_count("auto_evidence_gone") == before + 1
    [line] = [r for r in caplog.records if r.getMessage() == "Conflict resolved"]
    assert (line.conflictId, line.action, line.conflictType) == (
        found[("b", "c")], "auto_evidence_gone", "file_conflict")
    # (a, c) still share x.py: it stays, listed as existing.
    assert [c["id"] for c in result["existing"]] == [found[("a", "c")]]
    # Nothing more to close the next time.
    assert "closed" not in detect(tools)


def test_sharing_any_path_keeps_it_and_a_changed_overlap_is_superseded(tools, make_task):
    make_task("a", keyFiles=["1.py", "2.py", "3.py"])
    make_task("b", keyFiles=["1.py", "2.py", "3.py"])
    [wide] = files_conflict(tools)["detected"]
    save_task_changes("b", {"keyFiles": ["1.py", "2.py"]})
    result = files_conflict(tools)
    [narrow] = result["detected"]
    assert narrow["evidence"]["actualValue"] == ["1.py", "2.py"]
    [closed] = result["closed"]
    assert (closed["id"], closed["resolvedBy"]) == (wide["id"],
                                                    f"auto: superseded by {narrow['id']}")
    assert closed["notes"].endswith("tasks a and b now share 1.py, 2.py")
    assert [str(c.pk) for c in open_conflicts()] == [narrow["id"]]


@pytest.mark.parametrize("status", ["completed", "archived"])
def test_a_task_no_longer_active_shares_nothing(tools, make_task, status):
    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["x.py"])
    [conflict] = files_conflict(tools)["detected"]
    save_task_changes("b", {"status": status})
    [closed] = files_conflict(tools)["closed"]
    assert closed["id"] == conflict["id"]
    assert closed["notes"] == f"auto: evidence gone: task b is {status}"


def test_a_deleted_task_shares_nothing(tools, make_task):
    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["x.py"])
    [conflict] = files_conflict(tools)["detected"]
    TaskContext.objects.filter(task_id="b").delete()
    [closed] = files_conflict(tools)["closed"]
    assert (closed["id"], closed["notes"]) == (conflict["id"],
                                               "auto: evidence gone: task b no longer exists")


def test_earlier_steps_are_kept_in_the_history(tools, make_task):
    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["x.py"])
    [conflict] = files_conflict(tools)["detected"]
    tools.ok("update_conflict_status", {"conflictId": conflict["id"], "status": "investigating",
                                        "by": "ops", "notes": "looking"})
    save_task_changes("b", {"keyFiles": ["y.py"]})
    files_conflict(tools)
    row = ContextConflict.objects.get(pk=conflict["id"])
    assert row.resolution_status == "resolved"
    [step] = row.resolution["history"]
    assert (step["action"], step["by"], step["notes"]) == ("investigate", "ops", "looking")


def test_reported_and_ignored_conflicts_are_left_alone(tools, make_task):
    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["y.py"])
    reported = tools.ok("report_conflict", {
        "taskAId": "a", "taskBId": "b", "conflictType": "file_conflict",
        "description": "both edit z.py in their worktrees",
        "evidence": {"field": "keyFiles", "actualValue": ["z.py"]}})["conflict"]
    make_task("c", keyFiles=["q.py"])
    make_task("d", keyFiles=["q.py"])
    [ignored] = files_conflict(tools)["detected"]
    tools.ok("resolve_conflict", {"conflictId": ignored["id"],
                                  "resolution": {"action": "ignore"}})
    save_task_changes("d", {"keyFiles": []})
    assert "closed" not in files_conflict(tools)
    assert ContextConflict.objects.get(pk=reported["id"]).resolution_status == "unresolved"
    assert ContextConflict.objects.get(pk=ignored["id"]).resolution_status == "ignored"


def test_a_run_over_some_tasks_closes_only_theirs(tools, make_task):
    for task_id in ("a", "b", "c", "d"):
        make_task(task_id, keyFiles=["x.py"] if task_id in "ab" else ["y.py"])
    found = {c["taskAId"]: c["id"] for c in files_conflict(tools)["detected"]}
    save_task_changes("b", {"keyFiles": []})
    save_task_changes("d", {"keyFiles": []})
    [closed] = files_conflict(tools, taskIds=["c"])["closed"]
    assert closed["id"] == found["c"]
    assert ContextConflict.objects.get(pk=found["a"]).resolution_status == "unresolved"
    # A run of other types does not judge file conflicts either.
    assert "closed" not in detect(tools, conflictTypes=["lock_collision"])
    assert [c["id"] for c in files_conflict(tools)["closed"]] == [found["a"]]


def test_lock_collision_closes_once_the_abandoned_lock_is_gone(tools, make_task):
    make_task("t1")
    make_task("t2")
    write_lock("t1", "crashed", expires_in=-60)
    write_lock("t2", "crashed", expires_in=-60)
    found = {c["taskAId"]: c["id"] for c in
             detect(tools, conflictTypes=["lock_collision"])["detected"]}
    assert "closed" not in detect(tools, conflictTypes=["lock_collision"])
    redis_store.delete(locks.lock_key("t1"))  # released
    locks.acquire_lock("t2", "new-owner")  # taken over: a live lock is no collision
    result = detect(tools, conflictTypes=["lock_collision"])
    assert result["detected"] == []
    assert {c["id"] for c in result["closed"]} == set(found.values())
    [note] = {c["notes"] for c in result["closed"] if c["id"] == found["t1"]}
    assert note == ("auto: evidence gone: the expired lock of session crashed is no longer in "
                    "Redis as seen (released, renewed or taken over)")


def test_lock_collision_is_not_judged_while_redis_is_down(tools, make_task, settings):
    from tests.conftest import free_port

    make_task("t1")
    write_lock("t1", "crashed", expires_in=-60)
    [conflict] = detect(tools, conflictTypes=["lock_collision"])["detected"]
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    result = detect(tools, conflictTypes=["lock_collision"])
    assert result["skipped"] and "closed" not in result
    assert ContextConflict.objects.get(pk=conflict["id"]).resolution_status == "unresolved"


def test_state_mismatch_closes_when_the_cache_agrees_again(tools, make_task):
    make_task("t1", currentPhase="design")
    key = cache.task_cache_key("t1")
    good = redis_store.get_json(key)
    redis_store.set_json(key, {**good, "currentPhase": "stale"}, 600)
    [conflict] = detect(tools, conflictTypes=["state_mismatch"])["detected"]
    redis_store.set_json(key, good, 600)
    [closed] = detect(tools, conflictTypes=["state_mismatch"])["closed"]
    assert closed["id"] == conflict["id"]
    assert closed["notes"] == ("auto: evidence gone: the Redis cache agrees with Postgres on "
                               "currentPhase again")


def test_data_inconsistency_closes_when_the_file_agrees_again(tools, make_task, settings):
    make_task("t1", currentPhase="design")
    path = files.task_file("t1")
    good = json.loads(path.read_text())
    files.write_json_atomic(path, {**good, "currentPhase": "edited by hand"})
    [conflict] = detect(tools, conflictTypes=["data_inconsistency"])["detected"]
    files.write_json_atomic(path, good)
    settings.ENABLE_FILE_SYNC = False  # the method does not look: nothing is judged
    assert "closed" not in detect(tools, conflictTypes=["data_inconsistency"])
    settings.ENABLE_FILE_SYNC = True
    [closed] = detect(tools, conflictTypes=["data_inconsistency"])["closed"]
    assert closed["id"] == conflict["id"]


def test_version_divergence_closes_with_its_task(tools, make_task):
    make_task("t1")
    save_task_changes("t1", {"currentPhase": "one"}, change_type="recovery")
    save_task_changes("t1", {"currentPhase": "two"}, change_type="recovery")
    [conflict] = detect(tools, conflictTypes=["version_divergence"])["detected"]
    assert "closed" not in detect(tools, conflictTypes=["version_divergence"])
    TaskContext.objects.filter(task_id="t1").update(status="completed")
    [closed] = detect(tools, conflictTypes=["version_divergence"])["closed"]
    assert (closed["id"], closed["notes"]) == (conflict["id"],
                                               "auto: evidence gone: task t1 is completed")


def test_a_person_resolving_first_wins(tools, make_task):
    """The automatic closing only ends a conflict still open: nothing recorded twice."""
    from conflicts.services import auto_close

    make_task("a", keyFiles=["x.py"])
    make_task("b", keyFiles=["x.py"])
    [conflict] = files_conflict(tools)["detected"]
    tools.ok("resolve_conflict", {"conflictId": conflict["id"],
                                  "resolution": {"action": "ignore"}})
    assert auto_close.close([auto_close.Closure(conflict["id"], auto_close.EVIDENCE_GONE,
                                                "test")]) == []
    assert ContextConflict.objects.get(pk=conflict["id"]).resolution == {
        "action": "ignore", "effects": []}
