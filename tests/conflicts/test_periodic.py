"""Periodic detection: the beat schedule, the Celery task, the management command,
the WARN log line and the metrics."""

from __future__ import annotations

import io
import json
import logging

import pytest
from django.core.management import CommandError, call_command
from prometheus_client import REGISTRY

from conflicts import tasks


def sample(name: str, **labels) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_task_detects_logs_and_counts(make_task, caplog):
    make_task("a", keyFiles=["1", "2", "3"])
    make_task("b", keyFiles=["1", "2", "3"])
    before = sample("session_orchestration_conflicts_detected_total",
                    type="file_conflict", severity="high")
    with caplog.at_level(logging.WARNING, logger="orchestrator.conflicts"):
        result = tasks.detect_conflicts_task.apply().get()
    assert result["summary"]["newConflicts"] == 1
    assert sample("session_orchestration_conflicts_detected_total",
                  type="file_conflict", severity="high") == before + 1
    [record] = [r for r in caplog.records if r.getMessage() == "Conflict detected"]
    assert record.levelname == "WARNING"
    assert (record.conflictType, record.severity, record.tasks) == ("file_conflict", "high",
                                                                    ["a", "b"])
    # Nothing new the second time: no log line, no count.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="orchestrator.conflicts"):
        assert tasks.detect_conflicts_task.apply().get()["summary"]["newConflicts"] == 0
    assert not [r for r in caplog.records if r.getMessage() == "Conflict detected"]


def test_resolution_metric(tools, make_task):
    make_task("a", keyFiles=["1"])
    make_task("b", keyFiles=["1"])
    [conflict] = tools.ok("detect_conflicts", {})["detected"]
    before = sample("session_orchestration_conflicts_resolved_total", action="ignore")
    tools.ok("resolve_conflict", {"conflictId": conflict["id"],
                                  "resolution": {"action": "ignore"}})
    assert sample("session_orchestration_conflicts_resolved_total",
                  action="ignore") == before + 1


def test_management_command(make_task):
    make_task("a", keyFiles=["1", "2", "3"])
    make_task("b", keyFiles=["1", "2", "3"])
    out = io.StringIO()
    call_command("detect_conflicts", "--type", "file_conflict", stdout=out)
    assert out.getvalue().startswith("new 1, existing 0, critical 0, high 1")
    out = io.StringIO()
    call_command("detect_conflicts", "--json", "--task", "a", stdout=out)
    assert json.loads(out.getvalue())["summary"]["existingConflicts"] == 1
    with pytest.raises(SystemExit) as exit_info:
        call_command("detect_conflicts", "--fail-on-high", stdout=io.StringIO())
    assert exit_info.value.code == 1
    with pytest.raises(CommandError, match="E1641"):
        call_command("detect_conflicts", "--type", "bogus")
