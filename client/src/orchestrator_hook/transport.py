"""One POST per tool call to ``/api/v1/tools/<tool>/``, with hard time limits.

HTTP/1.1 over a plain socket: ``http.client`` pulls in the ``email`` package, which costs
more start-up time than the rest of the hook together, and a hook makes one to three
small calls with ``Connection: close``.
"""

from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

from orchestrator_hook.watchdog import exchange

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class ServiceUnavailable(Exception):
    """The service could not be reached or did not answer in time: spool and retry later.
    ``retry_after``: the seconds the service asked to be left alone (a 429 or 503 with
    ``Retry-After``), else None."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class ToolRefused(Exception):
    """The service answered and refused the call (4xx): retrying the same call won't help."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message


# Statuses that say "try again later" rather than "this call is wrong".
RETRYABLE_STATUSES = frozenset({408, 425, 429})
# A Retry-After beyond this is not believed (a misconfigured proxy must not silence the
# hooks for a day): the calls wait in the spool at most this long before the next try.
MAX_RETRY_AFTER_SECONDS = 600.0


class Client:
    def __init__(self, url: str, token: str, connect_timeout: float = 0.3,
                 project: str | None = None, ca_file: str | None = None) -> None:
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.https = parts.scheme == "https"
        self.host = parts.hostname
        # An ASCII host goes to getaddrinfo as bytes: a str makes it encode the name with
        # the "idna" codec, whose import (stringprep, unicodedata) costs the hook more than
        # the call. Only a non-ASCII host name needs that codec.
        self.address: str | bytes = self.host.encode("ascii") if self.host.isascii() \
            else self.host
        self.port = parts.port or (443 if self.https else 80)
        self.base_path = parts.path
        self.token = token
        self.ca_file = ca_file
        self.connect_timeout = connect_timeout
        # Every call names the repository's project: the server puts whatever names no
        # project there. Only a well-formed id goes in a header line.
        self.project_header = f"X-Orchestrator-Project: {project}\r\n" \
            if project and project.isascii() and all(c.isalnum() or c in "._:-"
                                                     for c in project) else ""

    def call(self, tool: str, arguments: dict[str, Any], timeout: float) -> dict[str, Any]:
        """Return the tool's answer; raise ServiceUnavailable or ToolRefused."""
        if timeout <= 0:
            raise ServiceUnavailable("no time left for the call")
        body = json.dumps(arguments, ensure_ascii=False).encode()
        head = (f"POST {self.base_path}/api/v1/tools/{tool}/ HTTP/1.1\r\n"
                f"Host: {self.host}:{self.port}\r\n"
                f"Authorization: Bearer {self.token}\r\n"
                f"{self.project_header}"
                "Content-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n"
                "User-Agent: orchestrator-hook\r\nConnection: close\r\n\r\n")
        try:
            status, headers, payload = self._exchange(head.encode() + body, timeout)
        except (OSError, ValueError) as exc:
            raise ServiceUnavailable(f"{type(exc).__name__}: {exc}") from None
        try:
            answer = json.loads(payload) if payload else {}
        except ValueError:
            answer = None
        if 200 <= status < 300 and isinstance(answer, dict):
            return answer
        if status >= 500 or status in RETRYABLE_STATUSES or not isinstance(answer, dict):
            # Over the token's rate limit (429) the service says when to come back: the
            # call goes to the spool like any other it cannot take now.
            raise ServiceUnavailable(f"HTTP {status}", retry_after(headers))
        error = answer.get("error") if isinstance(answer.get("error"), dict) else {}
        code = str(error.get("code") or f"HTTP{status}")
        raise ToolRefused(status, code, str(error.get("message") or answer.get("detail") or ""))

    def _exchange(self, request: bytes, timeout: float
                  ) -> tuple[int, dict[bytes, bytes], bytes]:
        # ``timeout`` bounds the whole exchange, connect to last byte (watchdog.exchange).
        deadline = time.monotonic() + timeout
        sock = socket.create_connection((self.address, self.port),
                                        timeout=min(self.connect_timeout, timeout))
        try:
            if self.https:
                sock = tls_context(self.ca_file).wrap_socket(sock, server_hostname=self.host)
            answer = exchange(sock, request, deadline)
        finally:
            sock.close()
        return parse_message(answer)


def tls_context(ca_file: str | None = None):
    """The TLS settings of every HTTPS call: the system's CA store, or ``ca_file`` (a
    private CA's certificates, ``setup --ca-file``); host names checked either way."""
    import ssl

    return ssl.create_default_context(cafile=ca_file or None)


def retry_after(headers: dict[bytes, bytes]) -> float | None:
    """A ``Retry-After`` in seconds (the delay form; an HTTP date is not worth the import),
    at most MAX_RETRY_AFTER_SECONDS; None when absent or unreadable."""
    try:
        seconds = float(headers[b"retry-after"])
    except (KeyError, ValueError):
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS) if seconds >= 0 else None


def parse_message(raw: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    """Status, headers (lower-case names and values) and body of a complete HTTP/1.1
    response (Content-Length or chunked)."""
    head, separator, body = raw.partition(b"\r\n\r\n")
    if not separator:
        raise ValueError("incomplete HTTP response")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().lower()
    if headers.get(b"transfer-encoding") == b"chunked":
        decoded, rest = [], body
        while rest:
            size_line, _, rest = rest.partition(b"\r\n")
            size = int(size_line.split(b";")[0], 16)
            if size == 0:
                break
            decoded.append(rest[:size])
            rest = rest[size + 2:]
        body = b"".join(decoded)
    elif b"content-length" in headers:
        length = int(headers[b"content-length"])
        if len(body) < length:
            raise ValueError("truncated HTTP response")
        body = body[:length]
    return status, headers, body
