"""The official MCP conformance suite (@modelcontextprotocol/conformance, pinned with the
Node 22 it needs in tests/clients/mcp-conformance/) run against a live server's /mcp.

The suite's server scenarios connect without credentials and offer no way to add a
header, while every request to /mcp needs a bearer token. So the suite talks to a small
proxy on loopback that adds ``Authorization`` and passes everything else through
untouched (method, path, body, Host and Origin included): the Host and Origin checks
the dns-rebinding-protection scenario probes are the server's own.

``make conformance`` runs every server scenario against a real server with the
baseline ``expected-failures.yml`` (each entry a capability the server does not offer;
docs/agents/mcp.md); tests/clients/test_conformance_suite.py runs
dns-rebinding-protection in ``make test``.
"""

from __future__ import annotations

import http.client
import os
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

from tests.clients.conftest import install

SUITE_DIR = Path(__file__).parent / "mcp-conformance"
EXPECTED_FAILURES = SUITE_DIR / "expected-failures.yml"
# Hop-by-hop headers a proxy must not forward (RFC 9110 7.6.1).
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-connection"}


def _handler(target: str, token: str) -> type[BaseHTTPRequestHandler]:
    parts = urlsplit(target)

    class AddToken(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            headers["Authorization"] = f"Bearer {token}"
            upstream = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
            try:
                # skip_host: the client's own Host header goes through as it came.
                upstream.putrequest(self.command, self.path, skip_host=True,
                                    skip_accept_encoding=True)
                for name, value in headers.items():
                    upstream.putheader(name, value)
                upstream.endheaders(body)
                response = upstream.getresponse()
                payload = response.read()
            finally:
                upstream.close()
            self.send_response_only(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in HOP_BY_HOP | {"content-length"}:
                    self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_DELETE = do_OPTIONS = _forward

        def log_message(self, format, *args) -> None:  # the suite prints what matters
            pass

    return AddToken


@contextmanager
def token_proxy(target: str, token: str) -> Iterator[str]:
    """``http://127.0.0.1:<port>``: ``target`` with the bearer token added to each request."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(target, token))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def run_suite(server_url: str, token: str, *, scenario: str | None = None,
              baseline: bool = False, timeout: float = 900) -> subprocess.CompletedProcess:
    """Run the suite's server scenarios (one, or all of the active suite) against
    ``server_url``/mcp; ``baseline``: judged against expected-failures.yml."""
    install(SUITE_DIR)
    binaries = SUITE_DIR / "node_modules" / ".bin"  # node 22 first on PATH for the CLI
    env = {**os.environ, "PATH": f"{binaries}{os.pathsep}{os.environ.get('PATH', '')}"}
    with token_proxy(server_url, token) as proxied:
        command = [str(binaries / "conformance"), "server", "--url", f"{proxied}/mcp"]
        if scenario:
            command += ["--scenario", scenario]
        if baseline:
            command += ["--expected-failures", str(EXPECTED_FAILURES)]
        return subprocess.run(command, cwd=SUITE_DIR, env=env, capture_output=True,
                              text=True, timeout=timeout)
