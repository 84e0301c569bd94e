"""A reverse proxy serving the orchestrator under a path prefix on another address, as a
team's server is reached (``https://host/orchestrator/`` in front of the service): requests
under ``PREFIX`` go to the upstream with the prefix taken off and the upstream's Host
(what nginx's ``proxy_pass http://upstream/;`` does), answers stream back as they come
(MCP's event streams included). Anything else is a 404 from the proxy itself."""

from __future__ import annotations

import http.client
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PREFIX = "/orchestrator"
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "proxy-authorization", "proxy-authenticate", "host", "content-length"}


class PrefixProxy:
    def __init__(self, host: str, upstream_host: str, upstream_port: int, *,
                 tls: tuple[str, str] | None = None, name: str | None = None) -> None:
        """``tls``: (certificate file, key file) to serve HTTPS with (the proxy terminates
        TLS, as a team's does); ``name``: the host name in ``url`` (default ``host``)."""
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # the answer ends when the connection closes

            def log_message(self, *args) -> None:  # quiet: pytest shows the server's log
                pass

            def forward(self) -> None:
                if not (self.path == PREFIX or self.path.startswith(PREFIX + "/")):
                    self.send_error(404, "outside the proxied prefix")
                    return
                proxy.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() not in HOP_BY_HOP}
                headers["Host"] = f"{upstream_host}:{upstream_port}"
                if body is not None:
                    headers["Content-Length"] = str(len(body))
                upstream = http.client.HTTPConnection(upstream_host, upstream_port,
                                                      timeout=120)
                try:
                    upstream.request(self.command, self.path[len(PREFIX):] or "/", body,
                                     headers)
                    answer = upstream.getresponse()
                except OSError:
                    self.send_error(502, "upstream unreachable")
                    return
                self.send_response(answer.status, answer.reason)
                for name, value in answer.getheaders():
                    if name.lower() not in HOP_BY_HOP:
                        self.send_header(name, value)
                self.send_header("Connection", "close")
                self.end_headers()
                while chunk := answer.read1(65536):
                    self.wfile.write(chunk)
                    self.wfile.flush()
                upstream.close()

            do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = forward

        self.requests: list[str] = []
        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.server.daemon_threads = True
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://{name or host}:{self.server.server_port}{PREFIX}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> PrefixProxy:
        self.thread.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
