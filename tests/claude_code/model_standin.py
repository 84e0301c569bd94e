"""A scripted Messages API on loopback: the "model" the real Claude Code talks to in tests.

Claude Code (``ANTHROPIC_BASE_URL=<this server>``) sends ``POST /v1/messages``; each
request of the agent's main loop gets the next planned ``Step`` (text and/or ``tool_use``
blocks), streamed as server-sent events the way the real API streams them. Every request
body is recorded, so a test can assert what reached the model (tool results, a hook's
``additionalContext``).

Claude Code also makes requests of its own, which get a plain text answer and never
consume the script: side requests without a tool list (a session title, a token count),
and the compaction request, which carries the agent's tools and system prompt (for the
prompt cache) but ends with the summary instruction; it gets ``compact_summary``.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "claude-sonnet-4-5"
# The start of the instruction Claude Code appends to the conversation to compact it.
COMPACTION_INSTRUCTION = "Your task is to create a detailed summary of"


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any]


@dataclass
class Step:
    """One planned answer: optional text, then tool calls (stop_reason tool_use if any).

    ``before`` runs in the server thread before the answer is sent (e.g. stop the
    orchestrator mid-run, or block until the test lets the run go on).
    """

    text: str = ""
    tool_uses: list[ToolUse] = field(default_factory=list)
    before: Callable[[], None] | None = None


def say(text: str) -> Step:
    return Step(text=text)


def call(tool: str, /, *, before: Callable[[], None] | None = None, **tool_input: Any) -> Step:
    """A step calling one tool (``tool`` is positional-only: inputs may be named "name")."""
    return Step(tool_uses=[ToolUse(tool, tool_input)], before=before)


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
        """Everything the model was shown (system prompt and messages) as one string."""
        return json.dumps([self.body.get("system"), self.body.get("messages")])


class ModelStandIn:
    """Serves one script; ``requests`` lists every request received, in order."""

    def __init__(self, steps: list[Step], final_text: str = "Done.",
                 compact_summary: str = "The user asked for work; it was done.") -> None:
        self.steps = list(steps)
        self.final_text = final_text
        self.compact_summary = compact_summary
        self.requests: list[Request] = []
        self.lock = threading.Lock()
        handler = type("Handler", (_Handler,), {"standin": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> ModelStandIn:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def scripted_requests(self) -> list[Request]:
        with self.lock:
            return [r for r in self.requests if r.scripted]

    def next_step(self, path: str, body: dict[str, Any]) -> Step:
        kind = request_kind(body)
        with self.lock:
            self.requests.append(Request(path, body, kind, time.monotonic()))
            if kind == "side":
                return say("Untitled")
            if kind == "compaction":
                return say(f"<analysis>Scripted.</analysis>\n<summary>{self.compact_summary}"
                           "</summary>")
            if self.steps:
                return self.steps.pop(0)
        return say(self.final_text)


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


class _Handler(BaseHTTPRequestHandler):
    standin: ModelStandIn
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib name)
        pass

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self) -> None:
        self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                    "message": self.path}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        path = self.path.split("?")[0]
        if path.endswith("/count_tokens"):
            self._json(200, {"input_tokens": max(1, len(json.dumps(body)) // 4)})
            return
        if not path.endswith("/v1/messages"):
            self.do_GET()
            return
        step = self.standin.next_step(path, body)
        if step.before is not None:
            step.before()
        try:
            if body.get("stream"):
                self._stream(step, body)
            else:
                self._json(200, message(step, body, with_content=True))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client is gone (a test killed it while this step was held back)

    def _json(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, step: Step, body: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in stream_events(step, body):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()


def blocks(step: Step) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if step.text or not step.tool_uses:
        content.append({"type": "text", "text": step.text or "OK."})
    for use in step.tool_uses:
        content.append({"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}",
                        "name": use.name, "input": use.input})
    return content


def message(step: Step, body: dict[str, Any], *, with_content: bool) -> dict[str, Any]:
    content = blocks(step)
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
        "model": body.get("model") or MODEL,
        "content": content if with_content else [],
        "stop_reason": ("tool_use" if step.tool_uses else "end_turn") if with_content else None,
        "stop_sequence": None,
        "usage": {"input_tokens": max(1, len(json.dumps(body)) // 4),
                  "output_tokens": 1 if not with_content else 20,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def stream_events(step: Step, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The event sequence of one streamed answer (Messages API streaming format)."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": message(step, body, with_content=False)}]
    for index, block in enumerate(blocks(step)):
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
                "delta": {"stop_reason": "tool_use" if step.tool_uses else "end_turn",
                          "stop_sequence": None},
                "usage": {"output_tokens": 20}},
               {"type": "message_stop"}]
    return events
