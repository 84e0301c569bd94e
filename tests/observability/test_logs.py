"""Logs (spec 9.2): the JSON shape of 9.2.1 and the nine key events of 9.2.3, each with its
level and fields, written as the formatter writes them."""

from __future__ import annotations

import json
import logging

import pytest
from django.conf import settings

from conflicts import tasks as conflict_tasks
from foundation.observability.logformat import JsonFormatter
from sessions.services import recovery
from tests.sessions.helpers import backdate

# 9.2.3, with "duration" of a save spelled duration_ms as in the 9.2.1 example.
KEY_EVENTS = {
    "Session started": ("INFO", {"sessionId", "taskId", "projectDir"}),
    "Session ended": ("INFO", {"sessionId", "duration", "tasksWorked"}),
    "Session crashed": ("WARN", {"sessionId", "lastHeartbeat", "recoveryType"}),
    "Context saved": ("INFO", {"taskId", "version", "backends", "duration_ms"}),
    "Checkpoint created": ("INFO", {"checkpointId", "scope", "includedTasks"}),
    "Rollback executed": ("INFO", {"taskId", "target", "backupCreated"}),
    "Conflict detected": ("WARN", {"conflictType", "severity", "tasks"}),
    "Conflict resolved": ("INFO", {"conflictId", "action", "resolvedBy"}),
    "Task switched": ("INFO", {"fromTask", "toTask", "saved"}),
}


def test_the_line_shape_of_9_2_1():
    record = logging.makeLogRecord({
        "name": "orchestrator.contexts", "levelno": logging.WARNING, "levelname": "WARNING",
        "msg": "Context %s", "args": ("saved",), "created": 1768386600.0,
        "taskId": "task-123", "version": 5, "session_id": "session-xyz"})
    entry = json.loads(JsonFormatter().format(record))
    assert entry == {"timestamp": "2026-01-14T10:30:00.000Z", "level": "WARN",
                     "logger": "session-orchestration", "message": "Context saved",
                     "context": {"taskId": "task-123", "version": 5},
                     "session_id": "session-xyz", "component": "orchestrator.contexts"}


@pytest.mark.django_db
def test_the_nine_key_events(tools, json_logs):
    tools.ok("create_task", {"taskId": "log-a", "name": "A", "keyFiles": ["x.py", "y.py"]})
    tools.ok("create_task", {"taskId": "log-b", "name": "B", "keyFiles": ["x.py", "y.py"]})
    tools.ok("start_session", {"sessionId": "log-s1", "taskId": "log-a", "projectDir": "/p"})
    tools.ok("save_context_snapshot", {"taskId": "log-a", "sessionId": "log-s1",
                                       "updates": {"currentPhase": "one"}})
    checkpoint = tools.ok("create_checkpoint", {"label": "c", "taskId": "log-a"})
    tools.ok("rollback_to", {"taskId": "log-a", "target": {
        "type": "checkpoint", "checkpointId": checkpoint["checkpointId"]}})
    tools.ok("switch_task", {"fromTaskId": "log-a", "toTaskId": "log-b",
                             "sessionId": "log-s1"})
    tools.ok("end_session", {"sessionId": "log-s1"})
    tools.ok("start_session", {"sessionId": "log-s2", "taskId": "log-b"})
    backdate("log-s2", 10)
    recovery.detect_crashed_sessions()
    conflict_tasks.detect_conflicts_task.apply().get()
    [conflict] = tools.ok("detect_conflicts", {})["existing"]
    conflict_id = conflict["id"]
    tools.ok("resolve_conflict", {"conflictId": conflict_id, "resolution": {"action": "ignore"}})

    lines = json_logs()
    for event, (level, fields) in KEY_EVENTS.items():
        matching = [line for line in lines if line["message"] == event]
        assert matching, f"no {event!r} line in {[line['message'] for line in lines]}"
        line = matching[0]
        assert line["level"] == level, (event, line)
        assert fields <= set(line["context"]), (event, fields - set(line["context"]))
        assert line["logger"] == "session-orchestration"
        assert line["timestamp"].endswith("Z")
    by_event = {}  # the first line of each event
    for line in lines:
        by_event.setdefault(line["message"], line)
    assert by_event["Session started"]["session_id"] == "log-s1"
    assert by_event["Session started"]["context"]["projectDir"] == "/p"
    assert by_event["Context saved"]["session_id"] == "log-s1"
    assert by_event["Context saved"]["context"]["backends"] == ["database", "redis", "file"]
    assert by_event["Session crashed"]["context"]["sessionId"] == "log-s2"
    assert by_event["Conflict detected"]["context"]["tasks"] == ["log-a", "log-b"]
    assert by_event["Conflict resolved"]["context"]["action"] == "ignore"
    switched = by_event["Task switched"]["context"]
    assert (switched["fromTask"], switched["toTask"], switched["saved"]) == ("log-a", "log-b", True)
    assert by_event["Rollback executed"]["context"]["backupCreated"] is True
    # Every key event names its project at the top level of the line (issue 19).
    for event in KEY_EVENTS:
        assert by_event[event]["projectId"] == settings.MCP_PROJECT_ID, by_event[event]


@pytest.mark.django_db
def test_lines_carry_the_project_of_what_they_are_about(tools, json_logs):
    tools.ok("create_project", {"projectId": "web", "name": "Web"})
    tools.ok("create_task", {"taskId": "log-w", "name": "W", "projectId": "web"})
    tools.ok("save_context_snapshot", {"taskId": "log-w", "updates": {"currentPhase": "x"}})
    tools.ok("update_global_context", {"projectId": "web", "hardRules": ["r"]})
    lines = {line["message"]: line for line in json_logs()}
    for event in ("task created", "Context saved", "global context updated",
                  "project created"):
        assert lines[event]["projectId"] == "web", lines[event]
        assert "projectId" not in lines[event].get("context", {})


@pytest.mark.django_db
def test_cache_operations_are_debug_lines(tools, json_logs):
    logging.getLogger("orchestrator").setLevel(logging.DEBUG)
    tools.ok("create_task", {"taskId": "log-c", "name": "C"})
    tools.ok("get_unified_context", {"taskId": "log-c"})
    [hit] = [line for line in json_logs() if line["message"] == "Cache hit"]
    assert hit["level"] == "DEBUG" and hit["context"]["taskId"] == "log-c"
