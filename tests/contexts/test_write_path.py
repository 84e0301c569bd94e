"""The five task writes go through one door (contexts.services.write.write_task) and leave
the same traces: one version row saying who and why, the Redis cache and the file backup
at that version, one graph outbox row exactly when a column the graph shows changed, and
one ``task_changed`` after the commit (``task_switched`` too, for a switch with a session).

Transactional: every call commits, as in production, so the after-commit work (the
signal, the publish of writes made inside switch_task's and resolve_conflict's
transactions) really runs after a commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.db import connection

from contexts import signals
from contexts.models import ContextVersion, TaskContext
from contexts.services import cache, write
from contexts.services.save import save_task_changes
from foundation.backends import files, redis_store

MIRRORED = sorted(write.MIRRORED_COLUMNS)


@dataclass
class Operation:
    name: str
    change_type: str
    summary_starts: str
    run: Callable  # (tools, session_id) -> None, changes task "w"


def _save(tools, session):
    tools.ok("save_context_snapshot", {"taskId": "w", "sessionId": session,
                                       "changeSummary": "by hand",
                                       "updates": {"currentPhase": "saved"}})


def _rollback(tools, session):
    tools.ok("rollback_to", {"taskId": "w", "sessionId": session, "createBackup": False,
                             "target": {"type": "version", "version": 1}})


def _switch(tools, session):
    tools.ok("switch_task", {"fromTaskId": "w", "toTaskId": "other", "sessionId": session,
                             "currentTaskUpdates": {"currentPhase": "left"}})


def _resolve(tools, session):
    [conflict] = tools.ok("detect_conflicts", {"conflictTypes": ["file_conflict"]})["detected"]
    loser = "w" if conflict["taskBId"] == "w" else None
    action = "use_a" if loser else "use_b"
    tools.ok("resolve_conflict", {"conflictId": conflict["id"], "sessionId": session,
                                  "resolution": {"action": action}})


def _record_activity(tools, session):
    tools.ok("record_activity", {"sessionId": session, "taskId": "w", "toolUses": [
        {"tool": "Edit", "success": True, "timestamp": "2026-11-24T10:00:00Z",
         "filePaths": ["/repo/src/new.py"]}]})


OPERATIONS = [
    Operation("save_context_snapshot", "manual", "by hand", _save),
    Operation("rollback_to", "manual", "Rollback to version 1", _rollback),
    Operation("switch_task", "auto_save", "Saved on switch to other", _switch),
    Operation("resolve_conflict", "manual", "Resolved conflict", _resolve),
    Operation("record_activity", "auto_save", "keyFiles from edits: src/new.py",
              _record_activity),
]


def _outbox_rows(task_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM graph_outbox WHERE kind = 'task' "
                       "AND entity_id = %s", [task_id])
        return cursor.fetchone()[0]


def _mirrored(task_id: str) -> dict:
    return TaskContext.objects.filter(task_id=task_id).values(*MIRRORED).get()


@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.name)
def test_each_task_write_leaves_the_same_traces(operation, transactional_db, tools, settings):
    # The outbox stays as the triggers left it: nothing drains it with the graph off.
    settings.ENABLE_NEO4J = False
    tools.ok("create_task", {"taskId": "w", "name": "Written", "currentPhase": "start",
                             "keyFiles": ["shared.py"]})
    tools.ok("create_task", {"taskId": "other", "name": "Other", "keyFiles": ["shared.py"]})
    tools.ok("save_context_snapshot", {"taskId": "w", "updates": {"iteration": 1}})
    session = tools.ok("start_session", {"taskId": "w", "projectDir": "/repo"})["sessionId"]
    before_version = TaskContext.objects.get(task_id="w").version
    before_mirrored = _mirrored("w")
    outbox_before = _outbox_rows("w")
    sent: list[tuple[str, str]] = []

    def on_changed(sender, task_id, change_type, **kwargs):
        sent.append((task_id, change_type))

    signals.task_changed.connect(on_changed, dispatch_uid="test-write-path")
    try:
        operation.run(tools, session)
    finally:
        signals.task_changed.disconnect(dispatch_uid="test-write-path")

    task = TaskContext.objects.get(task_id="w")
    assert task.version == before_version + 1, "exactly one new version"
    version = ContextVersion.objects.get(task_id="w", version=task.version)
    assert version.change_type == operation.change_type
    assert version.change_summary.startswith(operation.summary_starts)
    assert version.session_id == session
    assert ("w", operation.change_type) in sent, "task_changed after the commit"
    cached = redis_store.get_json(cache.task_cache_key("w"))
    assert cached["version"] == task.version, "the cache holds the new version"
    backup = json.loads(files.task_file("w").read_text())
    assert backup["version"] == task.version, "the file backup holds the new version"
    mirrored_changed = _mirrored("w") != before_mirrored
    assert _outbox_rows("w") - outbox_before == (1 if mirrored_changed else 0)


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
