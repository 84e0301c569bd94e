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

Django-prometheus's query metrics are kept, counted by a cursor of our own
(``_counting_cursor``), and timestamps are read by psycopg's loader
(``UtcTimestamptzLoader``): both cost less per statement under load than the originals.
"""

from __future__ import annotations

import datetime
import functools
import select
import time
from typing import Any, cast

import psycopg
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.base.base import NO_DB_ALIAS
from django.db.backends.postgresql import base as postgresql
from django_prometheus.db import (
    connection_errors_total,
    connections_total,
    errors_total,
    execute_many_total,
    execute_total,
)
from django_prometheus.db import query_duration_seconds as query_duration
from django_prometheus.db.backends.postgresql import base
from psycopg.adapt import AdaptersMap, Loader
from psycopg.pq import Format

from foundation.backends.postgres.pool import check_connection

TIMESTAMPTZ_OID = psycopg.adapters.types["timestamptz"].oid


@functools.cache
def _counting_cursor(cursor_class: type, alias: str, vendor: str) -> type:
    """``cursor_class`` counting its statements in django-prometheus's query metrics (the
    same series as its own cursor wrapper), made once per class.

    Why not django-prometheus's wrapper: it looks up each series' labelled child and builds
    two context managers and a dict for every statement, a few percent of a tool call's
    CPU under load; here the children are looked up once."""
    executed = execute_total.labels(alias, vendor)
    executed_many = execute_many_total.labels(alias, vendor)
    duration = query_duration.labels(alias, vendor)

    def timed(run: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return run(*args, **kwargs)
        except Exception as exc:
            errors_total.labels(alias, vendor, type(exc).__name__).inc()
            raise
        finally:
            duration.observe(time.perf_counter() - started)

    class CountingCursor(cursor_class):
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            executed.inc()
            return timed(super().execute, *args, **kwargs)

        def executemany(self, query: Any, params_seq: Any, *args: Any, **kwargs: Any) -> Any:
            params_seq = list(params_seq)
            executed.inc(len(params_seq))
            executed_many.inc(len(params_seq))
            return timed(super().executemany, query, params_seq, *args, **kwargs)

    CountingCursor.__name__ = CountingCursor.__qualname__ = f"Counting{cursor_class.__name__}"
    return CountingCursor


# psycopg's own timestamptz loader: its C one where psycopg is built with it.
_TIMESTAMPTZ_LOADER = cast("type[Loader]",
                           psycopg.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT))


class UtcTimestamptzLoader(Loader):
    """psycopg's own timestamptz loader, for connections whose time zone is UTC.

    Django registers a Python subclass that loads each value, then replaces its time zone
    with Django's: a Python call per timestamp read, ~3 % of a tool call's CPU under
    load. On a UTC connection psycopg's loader already gives ``datetime.UTC``,
    Django's own, so nothing is replaced: ``load`` is psycopg's loader's, which a cursor
    calls without a Python frame when it is C (the C class cannot be subclassed).
    ``timezone`` is what Django compares before registering its loader on a cursor."""

    timezone = datetime.UTC

    def __init__(self, oid: int, context: Any = None) -> None:
        super().__init__(oid, context)
        self._loader = _TIMESTAMPTZ_LOADER(oid, context)
        # An attribute of the instance: it comes before the method below.
        self.load = self._loader.load  # type: ignore[method-assign]

    def load(self, data: Any) -> Any:  # what the instance's load replaces
        return self._loader.load(data)


@functools.cache
def _utc_adapters(template: AdaptersMap) -> AdaptersMap:
    """Django's adapters with ``UtcTimestamptzLoader``, made once per template."""
    adapters = AdaptersMap(template)
    adapters.register_loader(TIMESTAMPTZ_OID, UtcTimestamptzLoader)
    return adapters


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self) -> dict:
        """Django's parameters with a cursor counting its statements and, on a UTC
        connection, psycopg's own timestamptz loader. Both are made once rather than at
        every connect: with the pool, every tool call's connection loan is a connect."""
        pool = self._connection_pools.get(self.alias)
        if pool is not None:
            # A loan: Django asks for the parameters at every connect, but lent connections
            # were opened with the pool's.
            return pool.kwargs
        params = postgresql.DatabaseWrapper.get_connection_params(self)
        params["cursor_factory"] = _counting_cursor(params["cursor_factory"], self.alias,
                                                    self.vendor)
        # The connection's time zone is timezone_name (Django sets it at connect).
        if self.timezone is datetime.UTC and self.timezone_name == "UTC":
            params["context"] = _utc_adapters(params["context"])
        return params

    def get_new_connection(self, conn_params: dict) -> Any:
        """A new connection, or with the pool a loan. django-prometheus counts every call
        here as a new connection; a loan is not one, so with the pool the connections are
        counted where the pool opens them (``_configure_connection``)."""
        if self.pool is None:
            return super().get_new_connection(conn_params)
        try:
            return postgresql.DatabaseWrapper.get_new_connection(self, conn_params)
        except Exception:
            connection_errors_total.labels(self.alias, self.vendor).inc()
            raise

    def _configure_connection(self, connection: psycopg.Connection) -> Any:
        if self.pool is not None:  # the pool opened ``connection``
            connections_total.labels(self.alias, self.vendor).inc()
        return super()._configure_connection(connection)

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
