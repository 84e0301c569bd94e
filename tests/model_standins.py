"""Scripted model APIs on loopback: the "model" the real agent CLIs talk to in tests.

- ``ClaudeStandIn``: the Messages API (``POST /v1/messages``, streamed as server-sent
  events when asked, plus ``/count_tokens``) that Claude Code reaches through
  ``ANTHROPIC_BASE_URL``.
- ``CodexStandIn``: the OpenAI Responses API (``POST /v1/responses``, server-sent events)
  that Codex reaches through a custom ``model_provider`` whose ``base_url`` points here.
- ``GeminiStandIn``: the Gemini API (``POST /v1beta/models/<m>:streamGenerateContent?alt=sse``,
  plus the helper calls ``:generateContent`` and ``:countTokens``) that Gemini CLI reaches
  through ``GOOGLE_GEMINI_BASE_URL``.

Each request of the agent's main loop gets the next planned ``Step`` (text and/or tool
calls); once the script is used up every such request gets ``final_text``. Every request
body is recorded, so a test can assert what reached the model (a hook's injected context,
a tool result, a deny reason). The agents' own requests never consume the script: those
without a tool list (a session title, a token count, Codex's compaction, Gemini's helper
calls) and Claude Code's compaction request, which carries the agent's tools (for the
prompt cache) but ends with the summary instruction.
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
    """One planned answer: optional text, then tool calls. ``before`` runs in the server
    thread before the answer is sent (hold the agent mid-run, stop the orchestrator...)."""

    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    before: Callable[[], None] | None = None
    # Codex: the input token count the answer reports (above the compaction limit the
    # agent compacts its history before the next request).
    input_tokens: int = 100


TOOL_SEARCH = "tool_search"


def say(text: str) -> Step:
    return Step(text=text)


def call(tool: str, tool_input: dict[str, Any] | str | None = None, /, *,
         before: Callable[[], None] | None = None, input_tokens: int = 100,
         **named_input: Any) -> Step:
    """A step calling one tool, its input given whole (``call("apply_patch", "...")``) or
    by name (``call("Edit", file_path=...)``; ``tool`` is positional-only, so an input may
    be named "name")."""
    return Step(calls=[ToolCall(tool, named_input if tool_input is None else tool_input)],
                before=before, input_tokens=input_tokens)


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
    kind: str  # "agent" (answered from the script), "compaction" or "side"
    received_at: float  # time.monotonic()

    @property
    def scripted(self) -> bool:
        return self.kind == "agent"

    def text(self) -> str:
        """Everything the model was shown, as one string."""
        return json.dumps(self.body)


class _StandIn:
    """Serves one script; ``requests`` lists every request received, in order."""

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

    def record(self, request: Request) -> Step:
        """Keep ``request``; the next planned step for the agent's own turns, else the
        answer to one of its side requests."""
        with self.lock:
            self.requests.append(request)
            if request.scripted and self.steps:
                return self.steps.pop(0)
        return say(self.final_text) if request.scripted else self.unscripted(request)

    def unscripted(self, request: Request) -> Step:
        return say("Summary: the work so far.")

    def not_found(self, handler: _Handler) -> None:
        handler.json(404, {"error": {"message": f"not found: {handler.path}"}})

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        raise NotImplementedError


class _Handler(BaseHTTPRequestHandler):
    standin: _StandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self.standin.not_found(self)

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


# ---- Claude Code: the Messages API ----

CLAUDE_MODEL = "claude-sonnet-4-5"
# The start of the instruction Claude Code appends to the conversation to compact it.
COMPACTION_INSTRUCTION = "Your task is to create a detailed summary of"


class MessagesRequest(Request):
    def text(self) -> str:
        """The system prompt and the messages."""
        return json.dumps([self.body.get("system"), self.body.get("messages")])


def request_kind(body: dict[str, Any]) -> str:
    """The agent's own turns offer it tools; title/quota side requests do not; the
    compaction request offers them too but its last user message asks for the summary."""
    if not body.get("tools"):
        return "side"
    messages = body.get("messages") or []
    last = messages[-1].get("content") if messages else None
    texts = [last] if isinstance(last, str) else [
        part.get("text", "") for part in last or [] if isinstance(part, dict)]
    if any(COMPACTION_INSTRUCTION in text for text in texts):
        return "compaction"
    return "agent"


class ClaudeStandIn(_StandIn):
    """The Messages API as Claude Code calls it."""

    def __init__(self, steps: list[Step], final_text: str = "Done.",
                 compact_summary: str = "The user asked for work; it was done.") -> None:
        super().__init__(steps, final_text)
        self.compact_summary = compact_summary

    def unscripted(self, request: Request) -> Step:
        if request.kind == "compaction":
            return say(f"<analysis>Scripted.</analysis>\n<summary>{self.compact_summary}"
                       "</summary>")
        return say("Untitled")

    def not_found(self, handler: _Handler) -> None:
        handler.json(404, {"type": "error", "error": {"type": "not_found_error",
                                                      "message": handler.path}})

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if route.endswith("/count_tokens"):
            handler.json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
            return
        if not route.endswith("/v1/messages"):
            self.not_found(handler)
            return
        step = self.record(MessagesRequest(route, body, request_kind(body), time.monotonic()))
        if step.before is not None:
            step.before()
        if body.get("stream"):
            handler.sse([(event["type"], event) for event in message_events(step, body)])
        else:
            handler.json(200, message(step, body, with_content=True))


def message_blocks(step: Step) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if step.text or not step.calls:
        content.append({"type": "text", "text": step.text or "OK."})
    for use in step.calls:
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}",
                        "name": use.name, "input": use.input})
    return content


def message(step: Step, body: dict[str, Any], *, with_content: bool) -> dict[str, Any]:
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
        "model": body.get("model") or CLAUDE_MODEL,
        "content": message_blocks(step) if with_content else [],
        "stop_reason": ("tool_use" if step.calls else "end_turn") if with_content else None,
        "stop_sequence": None,
        "usage": {"input_tokens": max(1, len(json.dumps(body)) // 4),
                  "output_tokens": 1 if not with_content else 20,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def message_events(step: Step, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The event sequence of one streamed answer (Messages API streaming format)."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message(step, body, with_content=False)}]
    for index, block in enumerate(message_blocks(step)):
        if block["type"] == "text":
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            start = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [{"type": "content_block_start", "index": index, "content_block": start},
                   {"type": "content_block_delta", "index": index, "delta": delta},
                   {"type": "content_block_stop", "index": index}]
    events += [{"type": "message_delta",
                "delta": {"stop_reason": "tool_use" if step.calls else "end_turn",
                          "stop_sequence": None},
                "usage": {"output_tokens": 20}},
               {"type": "message_stop"}]
    return events


# ---- Codex: the Responses API ----

class CodexStandIn(_StandIn):
    """The Responses API as Codex streams it."""

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        if not path.split("?")[0].endswith("/responses"):
            self.not_found(handler)
            return
        # Codex's own compaction request offers no tools; the agent's turns do.
        kind = "agent" if body.get("tools") else "side"
        step = self.record(Request(path, body, kind, time.monotonic()))
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


# ---- Gemini CLI: the generateContent family ----

class GeminiStandIn(_StandIn):
    """The Gemini API's generateContent family."""

    def handle(self, handler: _Handler, path: str, body: dict[str, Any]) -> None:
        route = path.split("?")[0]
        if route.endswith(":countTokens"):
            handler.json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
            return
        if not (route.endswith(":streamGenerateContent") or route.endswith(":generateContent")):
            self.not_found(handler)
            return
        streamed = route.endswith(":streamGenerateContent")
        # The agent's turns are streamed and offer tools; helper calls (next-speaker
        # checks, summaries) are plain generateContent.
        kind = "agent" if streamed and body.get("tools") else "side"
        step = self.record(Request(path, body, kind, time.monotonic()))
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
