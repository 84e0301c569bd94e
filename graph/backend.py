"""Connection to the Bolt graph server through neomodel, with a circuit breaker.

The graph is a mirror of task_relationships (Postgres stays the source of truth), so a
graph outage must never fail a request: callers check ``available()`` and fall back.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time

from django.conf import settings

logger = logging.getLogger("orchestrator.graph")

_configured_url: str | None = None
_lock = threading.Lock()
_open_until = 0.0
CIRCUIT_OPEN_SECONDS = 5.0


def configure() -> None:
    """Point neomodel at NEOMODEL_DATABASE_URL (once per URL)."""
    global _configured_url
    url = settings.NEOMODEL_DATABASE_URL
    if _configured_url == url:
        return
    with _lock:
        if _configured_url == url:
            return
        from neomodel import config, db

        config.DATABASE_URL = url
        config.CONNECTION_TIMEOUT = 2.0
        config.MAX_TRANSACTION_RETRY_TIME = 1.0
        with contextlib.suppress(Exception):
            db.close_connection()
        db.set_connection(url=url)
        _configured_url = url


def trip() -> None:
    global _open_until
    _open_until = time.monotonic() + CIRCUIT_OPEN_SECONDS


def available() -> bool:
    return settings.ENABLE_NEO4J and time.monotonic() >= _open_until


def cypher(query: str, params: dict | None = None):
    """Run a Cypher query; trips the breaker and re-raises on a connection failure."""
    configure()
    from neomodel import db

    try:
        return db.cypher_query(query, params or {})
    except Exception:
        trip()
        raise


def health() -> str:
    global _open_until
    try:
        cypher("RETURN 1")
    except Exception as exc:
        return f"error: {str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__}"
    _open_until = 0.0
    return "ok"
