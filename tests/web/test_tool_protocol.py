"""The web server answers tool calls itself (orchestrator.web.tool_protocol), byte for byte
over a socket: keep-alive (closed after MAX_CALLS_PER_CONNECTION calls), pipelining behind
it and in front of Django, Expect, chunked bodies, HTTP/1.0, oversized bodies, refused
hosts and a client that hangs up mid-call."""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import pytest


class Wire:
    """One raw HTTP/1.1 connection to the live server."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.sock = socket.create_connection((parts.hostname, parts.port), timeout=30)
        self.reader = self.sock.makefile("rb")
        self.host = parts.netloc

    def send(self, raw: bytes) -> None:
        self.sock.sendall(raw)

    def request(self, path: str, token: str | None, body: bytes, *, method: str = "POST",
                extra: str = "", version: str = "1.1") -> bytes:
        auth = f"Authorization: Bearer {token}\r\n" if token else ""
        return (f"{method} {path} HTTP/{version}\r\nHost: {self.host}\r\n{auth}"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n{extra}"
                "\r\n").encode() + body

    def response(self) -> tuple[int, dict[str, str], bytes]:
        status = int(self.reader.readline().split()[1])
        headers = {}
        while (line := self.reader.readline().rstrip(b"\r\n")):
            name, _, value = line.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 100:
            return status, headers, b""
        body = self.reader.read(int(headers["content-length"]))
        return status, headers, body

    def closed_by_server(self) -> bool:
        return self.reader.read(1) == b""

    def close(self) -> None:
        self.reader.close()
        self.sock.close()


@pytest.fixture
def wire(live_api):
    url, _ = live_api
    connection = Wire(url)
    yield connection
    connection.close()


def task_body(task_id: str) -> bytes:
    return json.dumps({"taskId": task_id, "name": f"Task {task_id}"}).encode()


def test_tool_calls_on_one_kept_alive_connection(live_api, wire):
    _, token = live_api
    wire.send(wire.request("/api/v1/tools/create_task/", token, task_body("wire-1")))
    status, headers, body = wire.response()
    assert status == 200 and json.loads(body)["version"] == 1
    assert headers["content-type"] == "application/json" and "connection" not in headers
    assert "date" in headers
    wire.send(wire.request("/api/v1/tools/create_task/", token, task_body("wire-1")))
    status, _, body = wire.response()
    assert status == 409 and json.loads(body)["error"]["code"] == "E1614"
    wire.send(wire.request("/api/v1/tools/create_task", None, b"{}"))
    status, headers, body = wire.response()
    assert status == 401 and json.loads(body)["error"]["code"] == "E1609"
    assert headers["www-authenticate"] == 'Bearer realm="orchestrator"'


def test_pipelined_requests_are_answered_in_order(live_api, wire):
    """Tool calls and a Django page sent in one write: each answer in its request's place."""
    _, token = live_api
    wire.send(wire.request("/api/v1/tools/create_task/", token, task_body("pipe-1"))
              + wire.request("/api/v1/tools/get_unified_context/", token, b'{"taskId": "pipe-1"}')
              + f"GET /healthz HTTP/1.1\r\nHost: {wire.host}\r\n\r\n".encode()
              + wire.request("/api/v1/tools/create_task/", token, task_body("pipe-1")))
    answers = [wire.response() for _ in range(4)]
    assert [status for status, _, _ in answers] == [200, 200, 200, 409]
    assert json.loads(answers[1][2])["task"]["taskId"] == "pipe-1"
    assert b"E1614" in answers[3][2]


def test_expect_continue_then_a_chunked_body(live_api, wire):
    _, token = live_api
    body = task_body("chunked-1")
    wire.send(f"POST /api/v1/tools/create_task/ HTTP/1.1\r\nHost: {wire.host}\r\n"
              f"Authorization: Bearer {token}\r\nExpect: 100-continue\r\n"
              "Transfer-Encoding: chunked\r\n\r\n".encode())
    assert wire.response()[0] == 100
    wire.send(b"%x\r\n%s\r\n" % (10, body[:10]) + b"%x\r\n%s\r\n0\r\n\r\n"
              % (len(body) - 10, body[10:]))
    status, _, answer = wire.response()
    assert status == 200 and json.loads(answer)["taskId"] == "chunked-1"


def test_http_1_0_is_answered_then_closed(live_api, wire):
    _, token = live_api
    wire.send(wire.request("/api/v1/tools/get_unified_context/", token, b'{"taskId": "none"}',
                           version="1.0"))
    status, headers, body = wire.response()
    assert status == 404 and json.loads(body)["error"]["code"] == "E1610"
    assert headers["connection"] == "close"
    assert wire.closed_by_server()


def test_a_connection_is_closed_after_its_hundredth_tool_call(live_api, wire):
    """MAX_CALLS_PER_CONNECTION: the last call's answer says so and the server closes, so
    the client's next connection goes to whichever worker accepts it first."""
    from orchestrator.web.tool_protocol import MAX_CALLS_PER_CONNECTION

    _, token = live_api
    call = wire.request("/api/v1/tools/get_unified_context/", token, b'{"taskId": "none"}')
    for _ in range(MAX_CALLS_PER_CONNECTION - 1):
        wire.send(call)
        status, headers, _ = wire.response()
        assert status == 404 and "connection" not in headers
    wire.send(call)
    status, headers, body = wire.response()
    assert status == 404 and json.loads(body)["error"]["code"] == "E1610"
    assert headers["connection"] == "close"
    assert wire.closed_by_server()


def test_a_body_over_the_limit_is_413_and_the_connection_goes_on(live_api, wire):
    from orchestrator.web import fastlane

    _, token = live_api
    huge = b'{"taskId": "big", "name": "' + b"x" * fastlane.MAX_BODY_BYTES + b'"}'
    wire.send(wire.request("/api/v1/tools/create_task/", token, huge))
    status, _, body = wire.response()
    assert status == 413 and json.loads(body)["error"]["code"] == "E1612"
    wire.send(wire.request("/api/v1/tools/get_unified_context/", token, b'{"taskId": "big"}'))
    assert wire.response()[0] == 404  # nothing of the refused call was stored


def test_a_foreign_host_is_refused_before_the_token(live_api, wire):
    wire.send(b"POST /api/v1/tools/create_task/ HTTP/1.1\r\nHost: evil.example\r\n"
              b"Content-Length: 2\r\n\r\n{}")
    status, _, body = wire.response()
    assert status == 400 and json.loads(body)["error"]["code"] == "E1670"


def test_a_client_that_hangs_up_mid_call_leaves_the_call_done(live_api):
    """The call runs to its end (its save is kept); the answer goes nowhere, and the server
    goes on serving."""
    url, token = live_api
    gone = Wire(url)
    gone.send(gone.request("/api/v1/tools/create_task/", token, task_body("hung-up")))
    gone.close()
    other = Wire(url)
    try:
        deadline = time.monotonic() + 10  # the call may still be running in its thread
        while True:
            other.send(other.request("/api/v1/tools/get_unified_context/", token,
                                     b'{"taskId": "hung-up"}'))
            status, _, _ = other.response()
            if status == 200 or time.monotonic() > deadline:
                break
        assert status == 200
    finally:
        other.close()


def test_a_percent_encoded_path_takes_the_asgi_route_to_the_same_tool(live_api, wire):
    _, token = live_api
    wire.send(wire.request("/api/v1/tools/create%5Ftask/", token, task_body("encoded-1")))
    status, _, body = wire.response()
    assert status == 200 and json.loads(body)["taskId"] == "encoded-1"


def test_a_malformed_request_to_a_tool_is_400_and_closed(live_api, wire):
    """Broken framing (a Content-Length that is no number) on a tool path: the parser's
    400, the connection closed, no tool run."""
    wire.send(f"POST /api/v1/tools/create_task/ HTTP/1.1\r\nHost: {wire.host}\r\n"
              "Content-Length: ten\r\n\r\n{}".encode())
    status, _, body = wire.response()
    assert status == 400 and b"Invalid HTTP request" in body
    assert wire.closed_by_server()
