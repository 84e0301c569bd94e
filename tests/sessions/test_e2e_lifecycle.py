"""Spec 12.4.1: the complete session lifecycle, over the tool endpoints."""

from __future__ import annotations

import pytest

from sessions.models import ToolInvocation

pytestmark = pytest.mark.django_db


def test_full_session_lifecycle(tools):
    session = tools.ok("start_session", {"sessionId": "test-session",
                                         "projectDir": "project-dir"})
    assert session["status"] == "active"

    tools.ok("create_task", {"taskId": "e2e-task", "name": "E2E task"})
    tools.ok("save_context_snapshot", {"taskId": "e2e-task", "sessionId": "test-session",
                                       "updates": {
                                           "status": "in_progress",
                                           "currentPhase": "implementation",
                                           "immediateContext": {
                                               "workingOn": "Feature X",
                                               "lastAction": "Created file",
                                               "nextStep": "Write tests", "blockers": []}}})
    checkpoint = tools.ok("create_checkpoint", {"label": "Pre-test checkpoint",
                                                "taskId": "e2e-task", "checkpointType": "manual",
                                                "sessionId": "test-session"})
    assert checkpoint["checkpointId"]
    tools.ok("save_context_snapshot", {"taskId": "e2e-task", "sessionId": "test-session",
                                       "updates": {"currentPhase": "testing"}})
    rollback = tools.ok("rollback_to", {"taskId": "e2e-task", "sessionId": "test-session",
                                        "target": {"type": "checkpoint",
                                                   "checkpointId": checkpoint["checkpointId"]}})
    assert rollback["restoredState"]["currentPhase"] == "implementation"

    ended = tools.ok("end_session", {"sessionId": "test-session"})
    assert ended["status"] == "ended" and ended["tasksWorked"] == 1

    recovery = tools.ok("check_recovery", {})
    assert recovery["needsRecovery"] is False
    assert list(ToolInvocation.objects.filter(session_id="test-session").order_by("id")
                .values_list("tool", flat=True)) == [
        "start_session", "save_context_snapshot", "create_checkpoint",
        "save_context_snapshot", "rollback_to", "end_session"]
