"""`python -m orchestrator.ops.webserver`: uvicorn with several worker processes and Nagle off.

With --workers > 1 uvicorn binds the listening socket itself with protocol 0, so asyncio
does not recognise it as TCP and never sets TCP_NODELAY on accepted connections. On a
keep-alive connection every response then waits ~40 ms for the client's delayed ACK
(measured here: 48 ms per request instead of 5 ms). Setting TCP_NODELAY on the listening
socket fixes it: Linux copies it to every accepted socket.
"""

from __future__ import annotations

import argparse
import os
import socket

import uvicorn
from uvicorn.supervisors import Multiprocess

from foundation.config import web_workers_from_env
from orchestrator.web.tool_protocol import ToolCallProtocol


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--workers", type=int, default=web_workers_from_env())
    args = parser.parse_args()
    # Before Django loads its settings here and in the worker processes (which inherit the
    # environment): request work gets REQUEST_STATEMENT_TIMEOUT_MS (orchestrator/settings.py).
    os.environ["ORCHESTRATOR_SERVES_REQUESTS"] = "1"

    config = uvicorn.Config("orchestrator.asgi:application", host=args.host, port=args.port,
                            workers=args.workers, lifespan="on", access_log=False,
                            proxy_headers=True, http=ToolCallProtocol)
    if args.workers <= 1:
        uvicorn.Server(config).run()
        return
    sock = config.bind_socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(config, sockets=[sock]).run()


if __name__ == "__main__":
    main()
