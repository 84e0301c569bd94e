"""ASGI entry point: one port for Django (admin, REST, docs, metrics) and MCP at /mcp
(every tool) and /mcp/agent (the tools a model should call itself).

Django runs as a WSGI app inside a fixed pool of threads (a2wsgi) rather than through
Django's ASGI handler: every view here is synchronous, and the ASGI handler would hop
threads per middleware and start a new thread (so a new database connection) per
request. A fixed pool keeps one persistent connection per thread and cuts the per-request
overhead several times over.
"""

from __future__ import annotations

import gc
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orchestrator.settings")

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402

django_app = WSGIMiddleware(get_wsgi_application(), workers=settings.WEB_THREADS)

from foundation.observability import tracing  # noqa: E402
from orchestrator.web import fastlane, hosts  # noqa: E402
from orchestrator.web.mcp import AGENT_PATH, PATH, build_http_app  # noqa: E402

mcp_app = build_http_app()


def _value(raw: bytes | None) -> str | None:
    return raw.decode("latin-1") if raw else None


def _authorization(scope) -> str | None:
    return _value(dict(scope.get("headers") or []).get(b"authorization"))


MCP_PATHS = frozenset({PATH, AGENT_PATH})


async def application(scope, receive, send):
    # An incoming traceparent becomes the parent of the tool call's span (only when tracing
    # is on: off, this is one bool test).
    token = tracing.attach_incoming_headers(scope.get("headers") or ()) if tracing.enabled \
        else None
    try:
        return await route(scope, receive, send)
    finally:
        tracing.detach(token)


async def route(scope, receive, send):
    if scope["type"] == "lifespan":
        # Django has no lifespan; the MCP session manager needs one to start its task group.
        return await mcp_app(scope, receive, send)
    if scope["type"] == "http":
        # Host and Origin first, on every path: the lanes below skip Django's ALLOWED_HOSTS.
        refusal = hosts.refusal(scope)
        if refusal is not None:
            return await fastlane.send_json(send, *refusal)
    path = scope["path"].rstrip("/") if scope["type"] == "http" else None
    if path in MCP_PATHS:
        principal, refusal = await fastlane.in_tool_thread(fastlane.check_token,
                                                           _authorization(scope))
        if refusal is not None:
            return await fastlane.send_json(send, *refusal)
        scope = {**scope, "path": path, "orchestrator.principal": principal}
        return await mcp_app(scope, receive, send)
    name = fastlane.tool_name(scope)
    if name is not None:
        headers = dict(scope.get("headers") or [])  # read once for both headers
        body = await fastlane.read_body(receive)
        answer = await fastlane.in_tool_thread(fastlane.handle, name,
                                               _value(headers.get(b"authorization")), body,
                                               _value(headers.get(fastlane.CLIENT_PROJECT)))
        return await fastlane.send_json(send, *answer)
    return await django_app(scope, receive, send)


def _tune_for_many_threads() -> None:
    """A web worker's event loop, tool threads and writer threads share one GIL, and a
    tool call waits for it after each of its ~10-20 database round trips. With the default
    5 ms switch interval a busy neighbour makes every wait up to 5 ms: at 500 agents a
    20 ms start_session took 200-500 ms and the tool-thread queue grew to seconds.
    Likewise a full garbage collection stops every thread, and it scanned every object
    Django and the drivers made at import (75-180 ms pauses, several a second under load).
    So: a shorter switch interval (WEB_GIL_SWITCH_INTERVAL_MS), and what import made is
    frozen out of the collector's scans, with fewer young collections."""
    sys.setswitchinterval(settings.WEB_GIL_SWITCH_INTERVAL_MS / 1000)
    gc.collect()
    gc.freeze()
    gc.set_threshold(20_000, 20, 20)


_tune_for_many_threads()
