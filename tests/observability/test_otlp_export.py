"""Spans really leave the processes over OTLP/HTTP (a receiver started by the test):
a save over MCP, a REST call, a Celery task and a management command, each followed from
an outside parent through Postgres, Redis and files."""

from __future__ import annotations

import secrets
import subprocess
import sys

import anyio
import httpx
import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from opentelemetry import trace

from contexts import tasks as context_tasks
from foundation.core.models import ApiToken
from tests import processes
from tests.conftest import free_port
from tests.otlp_receiver import OtlpReceiver
from tests.waiting import wait_for

FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}  # ms between batch exports


def traceparent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def mcp_call(url: str, headers: dict[str, str], name: str, arguments: dict) -> dict:
    async def call():
        async with (
            httpx2.AsyncClient(headers=headers, timeout=30) as http,
            streamable_http_client(f"{url}/mcp", http_client=http) as streams,
            ClientSession(streams[0], streams[1]) as session,
        ):
            await session.initialize()
            result = await session.call_tool(name, arguments)
            assert not result.is_error, result
            return result.structured_content

    return anyio.run(call)


def wait_for_spans(receiver: OtlpReceiver, trace_id: str, *names: str) -> list:
    # Generous: the batch exporter runs on a thread that a loaded 2-core machine starves.
    wait_for(lambda: set(names) <= {s.name for s in receiver.trace(trace_id)}, timeout=60)
    spans = receiver.trace(trace_id)
    assert set(names) <= {s.name for s in spans}, (
        sorted(s.name for s in spans),
        sorted({(s.trace_id, s.name) for s in receiver.spans if "." in s.name}))
    return spans


def one(spans: list, name: str):
    [span] = [s for s in spans if s.name == name]
    return span


@pytest.fixture
def receiver():
    with OtlpReceiver() as running:
        yield running


def chain_to_outside(spans: list, span) -> tuple[list[str], str]:
    """Names of ``span``'s ancestors in ``spans``, and the id of the first one outside it."""
    by_id = {s.span_id: s for s in spans}
    names = []
    while span.parent_span_id in by_id:
        span = by_id[span.parent_span_id]
        names.append(span.name)
    return names, span.parent_span_id


SAVE_SPANS = ("tools/call save_context_snapshot", "session_orchestration.save_context_snapshot",
              "postgres_update", "trigger_version_save", "postgres UPDATE", "redis_update",
              "redis", "file_sync", "file_write")


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_save_over_mcp_and_rest_is_exported_as_one_trace(receiver, spans, tmp_path):
    _, token = ApiToken.issue("otlp")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = processes.service_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                                **FAST_EXPORT)
    log = tmp_path / "web.log"
    auth = {"Authorization": f"Bearer {token}"}
    with processes.running({"web": processes.web(port, workers=1)}, env, log):
        processes.wait_until_serving(base, log)
        mcp_call(base, auth, "create_task", {"taskId": "otlp-1", "name": "exported"})

        # An MCP client that traces puts its trace context in the request's _meta (the
        # MCP SDK does; this test process traces through the `spans` fixture).
        with trace.get_tracer("agent").start_as_current_span("agent turn") as turn:
            saved = mcp_call(base, auth, "save_context_snapshot",
                             {"taskId": "otlp-1", "updates": {"currentPhase": "traced"}})
        trace_id = format(turn.get_span_context().trace_id, "032x")
        exported = wait_for_spans(receiver, trace_id, *SAVE_SPANS)
        tool = one(exported, "session_orchestration.save_context_snapshot")
        assert tool.service == "session-orchestration"
        assert tool.attributes["context.version"] == saved["version"] == 2
        assert tool.attributes["tool.transport"] == "mcp"
        chain, outside = chain_to_outside(exported, tool)
        assert chain == ["tools/call save_context_snapshot"]
        [client_span] = [s for s in spans.get_finished_spans()
                         if format(s.context.span_id, "016x") == outside]
        assert client_span.name == "MCP send tools/call save_context_snapshot"

        # A plain HTTP client: the traceparent header, on /mcp and on a REST tool call.
        trace_id, parent_id, header = traceparent()
        response = httpx.post(f"{base}/mcp", timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "save_context_snapshot",
                       "arguments": {"taskId": "otlp-1", "updates": {"currentPhase": "raw"}}}},
            headers={**auth, "traceparent": header,
                     "Accept": "application/json, text/event-stream"})
        assert response.status_code == 200, response.text
        assert response.json()["result"]["structuredContent"]["version"] == 3
        exported = wait_for_spans(receiver, trace_id, *SAVE_SPANS)
        chain, outside = chain_to_outside(
            exported, one(exported, "session_orchestration.save_context_snapshot"))
        assert chain == ["tools/call save_context_snapshot"] and outside == parent_id

        trace_id, parent_id, header = traceparent()
        response = httpx.post(f"{base}/api/v1/tools/get_unified_context/",
                              json={"taskId": "otlp-1"},
                              headers={**auth, "traceparent": header}, timeout=30)
        assert response.status_code == 200
        exported = wait_for_spans(receiver, trace_id, "session_orchestration.get_unified_context")
        read = one(exported, "session_orchestration.get_unified_context")
        assert read.parent_span_id == parent_id
        assert read.attributes["operation.type"] == "load"
        assert read.attributes["task.id"] == "otlp-1"


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_trace_context_reaches_a_celery_worker(receiver, spans, tmp_path):
    env = processes.service_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
                                **FAST_EXPORT)
    log = tmp_path / "worker.log"
    with processes.running({"worker": processes.celery_worker()}, env, log):
        tracer = trace.get_tracer("test")
        with tracer.start_as_current_span("enqueue") as parent:
            context_tasks.sync_hot_context_task.apply_async()
        trace_id = format(parent.get_span_context().trace_id, "032x")
        found = wait_for_spans(receiver, trace_id,
                               "session_orchestration.task.contexts.sync_hot_context",
                               "session_orchestration.sync_hot_context")
    task = one(found, "session_orchestration.task.contexts.sync_hot_context")
    assert task.parent_span_id == format(parent.get_span_context().span_id, "016x")
    assert one(found, "session_orchestration.sync_hot_context").parent_span_id == task.span_id


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_management_command_is_a_trace(receiver, tmp_path):
    env = processes.service_env(tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    done = subprocess.run([sys.executable, "manage.py", "detect_crashed_sessions"],
                          cwd=processes.ROOT, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    # The exporter flushes when the process exits.
    command = [s for s in receiver.spans
               if s.name == "session_orchestration.command.detect_crashed_sessions"]
    assert len(command) == 1 and command[0].parent_span_id == ""
    statements = [s for s in receiver.trace(command[0].trace_id) if s.name.startswith("postgres ")]
    assert statements and all(s.attributes["backend.type"] == "postgres" for s in statements)
