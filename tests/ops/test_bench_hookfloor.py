"""bench.hookfloor: the floor bench.hookcost compares our hook calls with does the work each
call promises, on the real schema (its triggers, its tables), or the comparison says
nothing."""

from __future__ import annotations

import json

import pytest

from bench.hookcost import uses_of
from bench.hookfloor import HookFloor, transport_floor
from claims.models import FileClaim
from contexts.models import ContextVersion, TaskContext
from foundation.backends import redis_store
from sessions.models import ActiveSession, ToolInvocation
from tests.processes import database_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_floor_keeps_each_promise_of_the_calls_it_stands_for(tools, settings, tmp_path):
    tools.ok("create_project", {"projectId": "floor", "name": "Floor"})
    tools.ok("start_session", {"sessionId": "s-floor", "projectId": "floor",
                               "projectDir": "/home/dev/floor", "gitBranch": "fix-parser",
                               "resolveTask": True, "createTask": True})
    session = ActiveSession.objects.get(session_id="s-floor")
    task = TaskContext.objects.get(task_id=session.task_id)
    floor = HookFloor(database_url(), settings.REDIS_URL, tmp_path, schema=settings.MCP_SCHEMA)
    redis = redis_store.client()
    try:
        # claim_files: the claim is stored, live.
        floor.claim("s-floor", "floor", ["src/parser.py"])
        claim = FileClaim.objects.get(session_id="s-floor", path="src/parser.py")
        assert claim.released_at is None and claim.task_id == task.task_id

        # record_activity with an edit of a new file: the history rows, the heartbeat,
        # the claim renewed, keyFiles appended with its version row, the task's Redis copy
        # and its file.
        floor.flush("s-floor", uses_of("src/parser.py"))
        assert ToolInvocation.objects.filter(session_id="s-floor", transport="hook").count() == 3
        appended = TaskContext.objects.get(task_id=task.task_id)
        assert appended.key_files[-1] == "src/parser.py"
        assert appended.version == task.version + 1
        version = ContextVersion.objects.get(task_id=task.task_id, version=appended.version)
        assert (version.change_summary, version.session_id) == ("keyFiles from edits",
                                                                 "s-floor")
        assert FileClaim.objects.get(pk=claim.pk).expires_at > claim.expires_at
        cached = json.loads(redis.get(f"floor:task:{task.task_id}"))
        assert cached["version"] == appended.version
        stored = json.loads((tmp_path / f"{task.task_id}.json").read_text())
        assert stored["version"] == appended.version
        assert redis.ttl("floor:heartbeat:s-floor") > 0

        # The same edit again finds the file listed: no new version.
        floor.flush("s-floor", uses_of("src/parser.py"))
        assert TaskContext.objects.get(task_id=task.task_id).version == appended.version
        assert ToolInvocation.objects.filter(session_id="s-floor").count() >= 6

        # heartbeat: last_heartbeat moves.
        beaten = ActiveSession.objects.get(session_id="s-floor").last_heartbeat
        floor.heartbeat("s-floor")
        assert ActiveSession.objects.get(session_id="s-floor").last_heartbeat > beaten
    finally:
        floor.close()
        redis.delete(f"floor:task:{task.task_id}", "floor:heartbeat:s-floor")


def test_the_transport_floor_is_a_server_that_answers(tmp_path):
    assert transport_floor(50, b'{"sessionId": "s-1"}') >= 0.0
