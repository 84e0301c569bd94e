"""django-prometheus's PostgreSQL backend (query metrics) with a free health check.

``CONN_HEALTH_CHECKS`` makes Django check a reused connection once per request before
its first query; the stock check is a ``SELECT 1``, a whole round trip on every tool call.
Here the check first asks the socket, without waiting: an idle connection has nothing to
read unless the server spoke unasked, which after ``pg_terminate_backend``, a restart or a
failover is its FATAL message and the end of the stream. Only then (or for a notice or
parameter change, which also arrive unasked) is the ``SELECT 1`` run, so the first
request after Postgres cut its connections reconnects instead of answering 503.

The socket is asked with ``poll()``, not ``select()``: ``select()`` refuses a file
descriptor of 1024 or more, and a busy worker's connection gets such a number, which made
every check fail and every request reconnect.
"""

from __future__ import annotations

import select

from django_prometheus.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed:
            return False
        try:
            poller = select.poll()
            poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
            events = poller.poll(0)
        except (OSError, ValueError):  # the socket is gone already
            return False
        if not events:
            return True
        return super().is_usable()
