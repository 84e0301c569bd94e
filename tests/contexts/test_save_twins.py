"""The one-statement save and its lock guard against the full path, over varied input.

A save outside a transaction runs one statement (``_UPDATE_SQL`` / ``_APPEND_SQL`` with
``_LOCK_RULE_GUARD``); the full path (BEGIN, ``SELECT ... FOR UPDATE``, the lock rule in
Python, ``UPDATE``, COMMIT) is what the fast one must agree with. Each case builds two
identical tasks, sends the same saves to both, one way each (``before_update`` forces the
full path), and compares what the caller is told and what is stored, error for error.
"""

from __future__ import annotations

from typing import Any

import pytest

from contexts.models import ContextVersion, TaskContext
from contexts.services import write
from contexts.services.tasks import create_task
from contexts.services.write import ListAppend, write_task
from foundation.core.errors import OrchestratorError
from locks import services as locks

pytestmark = pytest.mark.django_db(transaction=True)

# Columns that differ between two tasks by construction (their ids, the clock).
NOT_COMPARED = {"id", "task_id", "created_at", "updated_at", "last_session_at"}


def _full_path(task: TaskContext) -> None:
    """Given as ``before_update``, it takes the save down the full path and does nothing."""


def _save(task_id: str, changes: Any, session_id: str, *, fast: bool) -> dict[str, Any]:
    """What the caller is told: the error code, or the write's answer."""
    try:
        done = write_task(task_id, changes, change_type="manual", summary="why",
                          session_id=session_id, before_update=None if fast else _full_path)
    except OrchestratorError as refused:
        return {"error": refused.code}
    return {"changed": done.changed, "registry": done.registry, "graph": done.graph,
            "appended": done.appended, "savedTo": done.saved_to, "version": done.version}


def _stored(task_id: str) -> dict[str, Any]:
    """The task's row and its version rows, without what differs by construction."""
    row = TaskContext.objects.filter(task_id=task_id).values().get()
    versions = [
        {**version, "snapshot": {k: v for k, v in version["snapshot"].items()
                                 if k not in NOT_COMPARED}}
        for version in ContextVersion.objects.filter(task_id=task_id).order_by("version").values(
            "version", "snapshot", "change_summary", "change_type", "created_by", "session_id")]
    return {"row": {k: v for k, v in row.items() if k not in NOT_COMPARED},
            "versions": versions}


SAVES: list[tuple[str, Any]] = [
    ("s-1", {"currentPhase": "build"}),
    ("s-1", {"currentPhase": "build"}),  # no change: no new version
    ("s-2", {"status": "in_progress", "priority": 7}),
    ("s-1", {"immediateContext": {"workingOn": "parser", "nextStep": "tests"}}),
    ("s-2", {"keyFiles": ["a.py", "b.py"], "technicalDecisions": ["use psycopg 3"]}),
    ("s-1", ListAppend.of("keyFiles", ["b.py", "c.py"])),
    ("s-1", ListAppend.of("keyFiles", ["a.py"])),  # nothing to add
    ("s-2", {"iteration": 3, "resumePrompt": "carry on", "keywords": ["x", "y"]}),
    ("s-1", {"name": "Renamed", "status": "blocked"}),
]

# (task content at creation, the lock held before the saves: (session) or None)
STATES: list[tuple[dict[str, Any], str | None]] = [
    ({}, None),
    ({"lockedElements": ["keyFiles"]}, None),
    ({"lockedElements": ["keyFiles", "status"]}, "s-1"),
    ({}, "s-1"),
    ({}, "s-2"),
]


@pytest.mark.parametrize(("content", "holder"), STATES)
def test_the_one_statement_save_agrees_with_the_full_path(settings, monkeypatch, content,
                                                           holder):
    settings.ENABLE_NEO4J = False  # the mirror's queue is compared through the answer
    locked: list[str] = []  # the tasks the full path locked (lock_task), in order

    def lock_task(task_id: str) -> TaskContext:
        locked.append(task_id)
        return real_lock_task(task_id)

    real_lock_task = write.lock_task
    monkeypatch.setattr(write, "lock_task", lock_task)
    case = f"{len(content.get('lockedElements', []))}-{holder or 'none'}"
    fast_id, full_id = f"twin-fast-{case}", f"twin-full-{case}"
    for task_id in (fast_id, full_id):
        create_task(task_id, {"name": "Twin", **content})
        if holder:
            locks.acquire_lock(task_id, holder)
    for session_id, changes in SAVES:
        locked.clear()
        fast = _save(fast_id, changes, session_id, fast=True)
        fast_locked = list(locked)
        full = _save(full_id, changes, session_id, fast=False)
        assert fast == full, (session_id, changes)
        assert locked[len(fast_locked):] == [full_id]  # the full twin took the full path
        if not content and holder is None and fast.get("changed"):
            # Nothing for the lock rule to object to and something to write: the fast
            # twin really ran (its one statement; the full path locks the row first). An
            # append with nothing to add touches no row there and leaves the verdict to
            # the full path.
            assert fast_locked == [], changes
    assert _stored(fast_id) == _stored(full_id)
