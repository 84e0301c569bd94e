"""Scripted model APIs on loopback for the real Codex CLI and Gemini CLI.

- ``CodexStandIn``: the OpenAI Responses API (``POST /v1/responses``, server-sent events)
  that Codex reaches through a custom ``model_provider`` whose ``base_url`` points here.
- ``GeminiStandIn``: the Gemini API (``POST /v1beta/models/<m>:streamGenerateContent?alt=sse``,
  plus the helper calls ``:generateContent`` and ``:countTokens``) that Gemini CLI reaches
  through ``GOOGLE_GEMINI_BASE_URL``.

Each request of the agent's main loop gets the next planned ``Step`` (text and/or tool
calls); once the script is used up every request gets ``final_text``. Every request body is
recorded, so a test can assert what reached the model (a hook's injected context, a
deny reason). Requests without tools (Codex's compaction, Gemini's helper calls) never
consume the script.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ToolCall:
    name: str
    input: dict[str, Any] | str  # a freeform tool (Codex's apply_patch) takes a string
    # Codex: the namespace a deferred tool was loaded under (``tool_search_output``).
    namespace: str | None = None


@dataclass
class Step:
    """One planned answer. ``before`` runs in the server thread before it is sent (hold
    the agent mid-run, stop the orchestrator...)."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    before: Callable[[], None] | None = None
    # Codex: the input token count the answer reports (above the compaction limit the
    # agent compacts its history before the next request).
    input_tokens: int = 100


TOOL_SEARCH = "tool_search"


def say(text: str) -> Step:
    return Step(text=text)


def call(tool: str, tool_input: dict[str, Any] | str, *,
         before: Callable[[], None] | None = None, input_tokens: int = 100) -> Step:
    return Step(calls=[ToolCall(tool, tool_input)], before=before, input_tokens=input_tokens)


def codex_tool_search(query: str, limit: int = 8) -> Step:
    """Codex's client-executed ``tool_search`` (a ``tool_search_call`` item): Codex answers
    with the matching deferred tools (MCP tools) and offers them in the next request."""
    return call(TOOL_SEARCH, {"query": query, "limit": limit})


def codex_namespaced(namespace: str, tool: str, tool_input: dict[str, Any]) -> Step:
    """A call of a tool ``tool_search`` loaded (``function_call`` with its namespace)."""
    return Step(calls=[ToolCall(tool, tool_input, namespace)])


def codex_patch(path: str, old: str, new: str) -> Step:
    """Codex's ``apply_patch`` replacing the line ``old`` of ``path`` with ``new``."""
    return call("apply_patch", f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n"
                               "*** End Patch\n")


def codex_shell(command: str, **kwargs: Any) -> Step:
    return call("exec_command", {"cmd": command}, **kwargs)


def gemini_replace(path: str, old: str, new: str) -> Step:
    return call("replace", {"file_path": path, "old_string": old, "new_string": new,
                            "instruction": "Scripted edit."})


def gemini_shell(command: str, **kwargs: Any) -> Step:
    return call("run_shell_command", {"command": command, "description": "scripted"},
                **kwargs)


@dataclass
class Request:
    path: str
    body: dict[str, Any]
    scripted: bool
    received_at: float

    def text(self) -> str:
        return json.dumps(self.body)


class _StandIn:
    def __init__(self, steps: list[Step], final_text: str = "Done.") -> None:
        self.steps = list(steps)
        self.final_text = final_text
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def scripted_requests(self) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.scripted]

    def all_text(self) -> str:
        with self.lock:
            return "\n".join(r.text() for r in self.requests)

    def next_step(self, path: str, body: dict[str, Any], scripted: bool) -> Step:
        with self.lock:
            self.requests.append(Request(path, body, scripted, time.monotonic()))
            if scripted and self.steps:
                return self.steps.pop(0)
        return say(self.final_text if scripted else "Summary: the work so far.")

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    standin: _StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        pass

    def do_GET(self) -> None:
        self.json(404, {"error": {"message": f"not found: {self.path}"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        # The agent may be gone (a test killed it while a step was held back).
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.standin.handle(self, self.path, body)

    def json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def sse(self, events: list[tuple[str | None, dict[str, Any]]]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
        self.wfile.flush()


class CodexStandIn(_StandIn):
    """The Responses API as Codex streams it."""

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        if not path.split("?")[0].endswith("/responses"):
            handler.do_GET()
            return
        # Codex's own compaction request offers no tools; the agent's turns do.
        step = self.next_step(path, body, scripted=bool(body.get("tools")))
        if step.before is not None:
            step.before()
        response_id = f"resp_{uuid.uuid4().hex[:16]}"
        items: list[dict[str, Any]] = []
        if step.text or not step.calls:
            items.append({"type": "message", "role": "assistant",
                          "id": f"msg_{uuid.uuid4().hex[:16]}", "status": "completed",
                          "content": [{"type": "output_text", "text": step.text or "OK.",
                                       "annotations": []}]})
        for tool in step.calls:
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            if tool.name == TOOL_SEARCH:
                items.append({"type": "tool_search_call", "id": f"tsc_{call_id}",
                              "status": "completed", "call_id": call_id,
                              "execution": "client", "arguments": tool.input})
            elif isinstance(tool.input, str):
                items.append({"type": "custom_tool_call", "id": f"ctc_{call_id}",
                              "status": "completed", "call_id": call_id, "name": tool.name,
                              "input": tool.input})
            else:
                items.append({"type": "function_call", "id": f"fc_{call_id}",
                              "status": "completed", "call_id": call_id, "name": tool.name,
                              "arguments": json.dumps(tool.input),
                              **({"namespace": tool.namespace} if tool.namespace else {})})
        base = {"id": response_id, "object": "response", "model": body.get("model"),
                "created_at": int(time.time()), "status": "in_progress", "output": []}
        events: list[tuple[str | None, dict[str, Any]]] = [
            ("response.created", {"type": "response.created", "response": base})]
        for index, item in enumerate(items):
            events.append(("response.output_item.added", {
                "type": "response.output_item.added", "output_index": index,
                "item": {**item, "status": "in_progress"}}))
            if item["type"] == "message":
                events.append(("response.output_text.delta", {
                    "type": "response.output_text.delta", "item_id": item["id"],
                    "output_index": index, "content_index": 0,
                    "delta": item["content"][0]["text"]}))
            events.append(("response.output_item.done", {
                "type": "response.output_item.done", "output_index": index, "item": item}))
        events.append(("response.completed", {"type": "response.completed", "response": {
            **base, "status": "completed", "output": items,
            "usage": {"input_tokens": step.input_tokens, "output_tokens": 20,
                      "total_tokens": step.input_tokens + 20,
                      "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}}}}))
        handler.sse(events)


class GeminiStandIn(_StandIn):
    """The Gemini API's generateContent family."""

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if route.endswith(":countTokens"):
            handler.json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
            return
        if not (route.endswith(":streamGenerateContent") or route.endswith(":generateContent")):
            handler.do_GET()
            return
        streamed = route.endswith(":streamGenerateContent")
        # The agent's turns are streamed and offer tools; helper calls (next-speaker
        # checks, summaries) are plain generateContent.
        step = self.next_step(path, body, scripted=streamed and bool(body.get("tools")))
        if step.before is not None:
            step.before()
        parts: list[dict[str, Any]] = []
        if step.text or not step.calls:
            parts.append({"text": step.text or "OK."})
        for tool in step.calls:
            parts.append({"functionCall": {"name": tool.name, "args": tool.input}})
        answer = {"candidates": [{"content": {"role": "model", "parts": parts},
                                  "finishReason": "STOP", "index": 0}],
                  "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 20,
                                    "totalTokenCount": 120},
                  "modelVersion": "gemini-2.5-flash"}
        if streamed:
            handler.sse([(None, answer)])
        else:
            handler.json(200, answer)
