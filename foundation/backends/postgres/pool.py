"""The check psycopg's pool runs on a connection before lending it (settings: DB_POOL_*).

The same free check as ``base.DatabaseWrapper.is_usable``, for pooled connections: an idle
connection has nothing to read unless the server spoke unasked (after
``pg_terminate_backend``, a restart or a failover: its FATAL message and the end of the
stream), so the socket is asked without waiting and a round trip is spent only then. A
connection that fails it is discarded by the pool, which lends another, so the first
request after Postgres cut its connections does not answer 503.
"""

from __future__ import annotations

import select

import psycopg


def check_connection(connection: psycopg.Connection) -> None:
    """Raise if ``connection`` is no longer usable (psycopg_pool's ``check``)."""
    if connection.closed:
        raise psycopg.OperationalError("connection closed")
    poller = select.poll()
    try:
        poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
        events = poller.poll(0)
    except (OSError, ValueError) as exc:  # the socket is gone already
        raise psycopg.OperationalError("connection socket gone") from exc
    if events:
        connection.execute("SELECT 1")
