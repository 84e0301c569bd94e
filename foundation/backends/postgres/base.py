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

With a pool (settings DB_POOL_*: the web server's processes) the pool lends connections
checked by the same poll (``pool.check_connection``) rather than by Django's check, which
is a round trip per loan.
"""

from __future__ import annotations

import functools
import select

from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base as postgresql
from django_prometheus.db.backends.postgresql import base
from django_prometheus.db.common import ExportingCursorWrapper

from foundation.backends.postgres.pool import check_connection


@functools.cache
def _exporting_cursor(cursor_class: type, alias: str, vendor: str) -> type:
    """django-prometheus's query-counting cursor class for ``cursor_class``, made once."""
    return ExportingCursorWrapper(cursor_class, alias, vendor)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict:
        """Django's parameters with django-prometheus's counting cursor, as
        django-prometheus gives them, except that its cursor class is made once rather
        than at every connect: with the pool, every tool call's connection loan is a
        connect, and making the class was a quarter of the loan's CPU."""
        params = postgresql.DatabaseWrapper.get_connection_params(self)
        params["cursor_factory"] = _exporting_cursor(params["cursor_factory"], self.alias,
                                                     self.vendor)
        return params

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

    @property
    def pool(self):
        """Django's pool (``OPTIONS["pool"]``), lending connections checked by
        ``check_connection``. As Django builds it, but for the check, which Django fixes to
        psycopg_pool's round trip (CONN_HEALTH_CHECKS) or none."""
        options = self.settings_dict["OPTIONS"].get("pool")
        if self.alias == NO_DB_ALIAS or not options:
            return None
        if self.alias not in self._connection_pools:
            if self.settings_dict.get("CONN_MAX_AGE", 0) != 0:
                raise ImproperlyConfigured("Pooling doesn't support persistent connections.")
            from psycopg_pool import ConnectionPool

            connect_kwargs = self.get_connection_params()
            connect_kwargs["autocommit"] = True  # Django sets the connection up later
            pool = ConnectionPool(kwargs=connect_kwargs, open=False,
                                  configure=self._configure_connection,
                                  check=check_connection,
                                  **(options if isinstance(options, dict) else {}))
            # The first thread's pool wins (they are not opened until used).
            self._connection_pools.setdefault(self.alias, pool)
        return self._connection_pools[self.alias]
