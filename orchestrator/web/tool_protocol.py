"""The web server's HTTP/1.1 protocol: uvicorn's own (httptools), except that it answers
``POST /api/v1/tools/<name>/`` itself, without going through ASGI.

Why: these are the hook calls, hundreds a second from a team's agents. Through ASGI each
one cost an asyncio task, a request-response object, the receive and send messages, the
router's coroutines, asyncio's future chaining for the thread hop, and two socket writes
(headers, then body). Here the request is parsed by the same C parser, the call goes to a
tool thread with ``fastlane.handle`` (the one implementation of a REST tool call, the same
as the ASGI route's), and the answer is written with one socket write. Measured on a
2-core machine: 118-146 us of CPU per request through ASGI, 70-89 us here; the event loop
went from 14 % to 10 % of a web worker's CPU at 700 agents.

Everything else takes uvicorn's ASGI path unchanged: every other path and method, a
request pipelined behind one still being answered (the answers must keep their order), a
percent-encoded path, and every request while tracing is on (the span must follow the
call into its thread, which the ASGI route arranges).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

logger = logging.getLogger(__name__)

# Tool calls answered on one keep-alive connection before the answer closes it (as nginx's
# keepalive_requests does, at 1,000). Why: the web workers share one listening socket,
# and a connection stays with the worker that accepted it. A client that keeps a few busy
# connections (a proxy, an HTTP hook, the bench's agents) can pin most of the load on one
# worker while the others idle, and one worker's calls share its one GIL: at 1,000 agents
# the three workers took 45, 30 and 26 % of web's CPU (bench.agents). Closed now and then,
# the connection is opened again and accepted by whichever worker is free to: 34, 33, 33.
MAX_CALLS_PER_CONNECTION = 100


class _Ignored:
    """What uvicorn's ``connection_lost`` sets on the request in flight (an ASGI cycle's
    event): nothing waits on a tool call's."""

    def set(self) -> None:
        pass


class ToolCall:
    """One tool call read from a connection: its request, then its answer's progress. It
    stands as the connection's current request (``protocol.cycle``) while it is answered,
    so uvicorn queues a request pipelined behind it and shuts the connection down after it
    (``keep_alive``, ``response_complete`` and ``message_event`` are what uvicorn reads)."""

    __slots__ = ("name", "authorization", "project", "body", "too_large", "keep_alive",
                 "response_complete", "disconnected")
    message_event = _Ignored()

    def __init__(self, name: str, authorization: str | None, project: str | None,
                 keep_alive: bool) -> None:
        self.name = name
        self.authorization = authorization
        self.project = project
        self.body = bytearray()
        self.too_large = False
        self.keep_alive = keep_alive
        self.response_complete = False
        self.disconnected = False


class ToolCallProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, answering tool calls itself (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Imported here, in the web worker, not where the server's supervisor imports this
        # class: they load Django.
        from orchestrator.web import fastlane, hosts

        self._fastlane = fastlane
        self._hosts = hosts
        self._reading: ToolCall | None = None  # the tool call whose body is arriving
        self._calls = 0  # tool calls read from this connection

    def on_headers_complete(self) -> None:
        call = self._tool_call()
        if call is None:
            self._reading = None
            super().on_headers_complete()
            return
        if self.expect_100_continue:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        self._reading = call

    def _tool_call(self) -> ToolCall | None:
        """The request as a tool call this protocol answers, or None for uvicorn's path."""
        fastlane = self._fastlane
        if (self.parser.get_method() != b"POST" or fastlane.tracing.enabled
                or self.limit_concurrency is not None
                or not (self.cycle is None or self.cycle.response_complete)):
            return None
        match = fastlane.TOOL_PATH.match(httptools.parse_url(self.url).path.decode("latin-1"))
        if match is None or self.parser.should_upgrade():
            return None
        authorization = project = None
        for name, value in self.headers:
            if name == b"authorization":
                authorization = value.decode("latin-1")
            elif name == fastlane.CLIENT_PROJECT:
                project = value.decode("latin-1")
        self._calls += 1
        keep_alive = (self.parser.get_http_version() != "1.0"
                      and self.parser.should_keep_alive()
                      and self._calls < MAX_CALLS_PER_CONNECTION)
        call = ToolCall(match.group(1), authorization, project or None, keep_alive)
        self.cycle = call  # type: ignore[assignment]
        return call

    def on_body(self, body: bytes) -> None:
        call = self._reading
        if call is None:
            super().on_body(body)
        elif not call.too_large:
            call.body += body
            if len(call.body) > self._fastlane.MAX_BODY_BYTES:
                call.too_large, call.body = True, bytearray()

    def on_message_complete(self) -> None:
        call = self._reading
        if call is None:
            super().on_message_complete()
            return
        self._reading = None
        refusal = self._hosts.refusal({"headers": self.headers, "server": self.server})
        if refusal is not None:
            self._answer(call, refusal)
            return
        body = None if call.too_large else bytes(call.body)
        self._fastlane.TOOL_THREADS.call(self._run, call, body)

    def _run(self, call: ToolCall, body: bytes | None) -> None:
        """In a tool thread: the call, then its answer handed to the event loop."""
        try:
            answer = self._fastlane.handle(call.name, call.authorization, body, call.project)
        except Exception:  # the registry answers its own faults; this is a bug around it
            logger.exception("Tool call %s failed outside the tool", call.name)
            answer = (500, self._fastlane.error_body("E1699", "Unexpected server fault"), {})
        with contextlib.suppress(RuntimeError):  # the event loop closed: the server is gone
            self.loop.call_soon_threadsafe(self._answer, call, answer)

    def _answer(self, call: ToolCall, answer: tuple[int, dict[str, Any], dict[str, str]]
                ) -> None:
        """Write the answer in one piece, then go on as uvicorn does after a response."""
        call.response_complete = True
        if call.disconnected or self.transport.is_closing():
            return
        status, payload, headers = answer
        raw_headers, body = self._fastlane.json_answer(payload, headers)
        parts = [STATUS_LINE[status]]
        for name, value in (*self.server_state.default_headers, *raw_headers):
            parts += [name, b": ", value, b"\r\n"]
        if not call.keep_alive:
            parts.append(b"connection: close\r\n")
        parts += [b"\r\n", body]
        self.transport.write(b"".join(parts))
        if self.access_log:
            self.access_logger.info('%s - "POST /api/v1/tools/%s/ HTTP/1.1" %d',
                                    self.client[0] if self.client else "-", call.name, status)
        if not call.keep_alive:
            self.transport.close()
        self.on_response_complete()
