"""Tracing (spec 9.3) in process: span names, tree and attributes; off by default."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from contexts import tasks as context_tasks
from foundation.observability import tracing
from tests.observability.conftest import EXPORTER


def named(finished, name: str):
    [span] = [s for s in finished if s.name == name]
    return span


def children(finished, parent) -> list[str]:
    return sorted(s.name for s in finished
                  if s.parent is not None and s.parent.span_id == parent.context.span_id)


@pytest.mark.django_db
def test_a_save_is_one_trace_across_postgres_redis_and_files(tools, spans):
    tools.ok("create_task", {"taskId": "tr-1", "name": "traced"})
    spans.clear()
    tools.ok("save_context_snapshot", {"taskId": "tr-1", "sessionId": "s-1",
                                       "updates": {"currentPhase": "testing"}})
    finished = spans.get_finished_spans()
    root = named(finished, "session_orchestration.save_context_snapshot")
    assert root.parent is None
    assert {s.context.trace_id for s in finished} == {root.context.trace_id}
    assert dict(root.attributes) == {
        "operation.type": "save", "tool.name": "save_context_snapshot", "tool.transport": "rest",
        "task.id": "tr-1", "session.id": "s-1", "context.version": 2}
    assert {"validate_input", "postgres_update", "redis_update", "file_sync"} <= set(
        children(finished, root))
    postgres = named(finished, "postgres_update")
    assert postgres.attributes["backend.type"] == "postgres"
    # Spec 9.3.1: the versioning trigger's span under postgres_update; the trigger runs
    # inside the UPDATE, which is its child, and the version it wrote is an attribute.
    assert "trigger_version_save" in children(finished, postgres)
    versioned = named(finished, "trigger_version_save")
    assert dict(versioned.attributes) == {
        "backend.type": "postgres", "task.id": "tr-1",
        "db.trigger": "auto_save_context_version", "context.version": 2}
    assert children(finished, versioned) == ["postgres UPDATE"]
    update = [s for s in finished if s.name == "postgres UPDATE"][0]
    assert update.attributes["db.statement"].startswith('UPDATE "mcp_contexts"."task_contexts"')
    assert children(finished, named(finished, "redis_update")) == ["redis"]
    assert children(finished, named(finished, "file_sync")) == ["file_write"]
    file_write = named(finished, "file_write")
    assert file_write.attributes["backend.type"] == "file"
    assert file_write.attributes["file.path"].endswith("task-agents/tr-1.json")


@pytest.mark.django_db
def test_a_failed_call_is_an_error_span_with_its_code(tools, spans):
    tools.call("save_context_snapshot", {"taskId": "nope", "updates": {"currentPhase": "x"}})
    root = named(spans.get_finished_spans(), "session_orchestration.save_context_snapshot")
    assert root.status.status_code == StatusCode.ERROR
    assert root.attributes["error.code"] == "E1610"


@pytest.mark.django_db
def test_log_lines_inside_a_span_carry_its_ids(tools, spans, json_logs):
    tools.ok("create_task", {"taskId": "tr-2", "name": "logged"})
    tools.ok("save_context_snapshot", {"taskId": "tr-2", "updates": {"currentPhase": "p"}})
    root = named(spans.get_finished_spans(), "session_orchestration.save_context_snapshot")
    [line] = [entry for entry in json_logs() if entry["message"] == "Context saved"]
    assert line["trace_id"] == format(root.context.trace_id, "032x")
    assert line["span_id"] == format(root.context.span_id, "016x")


@pytest.mark.django_db
def test_a_celery_task_is_a_span_with_its_tool_call_inside(tools, spans):
    context_tasks.sync_hot_context_task.apply().get()
    finished = spans.get_finished_spans()
    task = named(finished, "session_orchestration.task.contexts.sync_hot_context")
    tool = named(finished, "session_orchestration.sync_hot_context")
    assert tool.parent.span_id == task.context.span_id
    assert tool.attributes["tool.transport"] == "task"


@pytest.mark.django_db
def test_off_by_default_makes_no_spans_and_no_ids(tools, json_logs):
    assert not tracing.endpoint_configured() and not tracing.enabled
    EXPORTER.clear()
    tools.ok("create_task", {"taskId": "tr-off", "name": "untraced"})
    assert not [s for s in EXPORTER.get_finished_spans()
                if s.name.startswith("session_orchestration.")]
    assert tracing.tool_span("create_task", "rest", {}) is tracing.backend_span("x", "redis")
    [line] = [entry for entry in json_logs() if entry["message"] == "task created"]
    assert "trace_id" not in line and "span_id" not in line
