"""Connection to the Bolt graph server through neomodel, with a circuit breaker.

The graph is a mirror of task_relationships (Postgres stays the source of truth), so a
graph outage must never fail a request: callers check ``available()`` and fall back.
Only connection failures trip the breaker; a bad query is a bug and is re-raised as is.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings

from foundation.core.errors import failure_reason
from foundation.observability import tracing

logger = logging.getLogger("orchestrator.graph")
T = TypeVar("T")

_configured_url: str | None = None
_schema_url: str | None = None
_lock = threading.Lock()
_schema_lock = threading.Lock()
_open_until = 0.0
CIRCUIT_OPEN_SECONDS = 5.0


class GraphTimeout(OSError):
    """The Bolt server did not answer in time (an OSError: treated as a connection error)."""


def _within_read_timeout(function: Callable[[], T]) -> T:
    """Run ``function`` (a Bolt exchange) and give up after NEO4J_READ_TIMEOUT_SECONDS.

    The driver bounds connecting (connection_timeout) and the handshake
    (connection_acquisition_timeout), but once a connection is open it waits for an answer
    as long as the server says nothing: a server that accepts and then never answers would
    hold the request's worker. So each exchange runs in a helper thread; on timeout the
    caller gets GraphTimeout (the breaker opens, readers fall back to Postgres) and the
    helper is left to end with its socket.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = function()
        except BaseException as exc:  # handed to the caller below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="bolt-call", daemon=True).start()
    timeout = settings.NEO4J_READ_TIMEOUT_SECONDS
    if not done.wait(timeout):
        raise GraphTimeout(f"the Bolt server did not answer within {timeout:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def configure() -> None:
    """Point neomodel at NEOMODEL_DATABASE_URL (once per URL)."""
    global _configured_url
    url = settings.NEOMODEL_DATABASE_URL
    if _configured_url == url:
        return
    with _lock:
        if _configured_url == url:
            return
        from neo4j import GraphDatabase
        from neomodel import db, get_config

        from foundation.config import bolt_target

        # Our own driver with an auth pair, not neomodel's URL parsing: that neither decodes
        # a percent-encoded password nor survives a raw "#" or "/" in one.
        address, auth, database = bolt_target(url)
        get_config().database_name = database or None
        driver = GraphDatabase.driver(
            address, auth=auth, connection_timeout=2.0,
            # Bounds the Bolt handshake too: a server that accepts and stays silent.
            connection_acquisition_timeout=settings.NEO4J_READ_TIMEOUT_SECONDS,
            max_transaction_retry_time=1.0)
        with contextlib.suppress(Exception):
            db.close_connection()
        db.set_connection(driver=driver)
        _configured_url = url


def trip() -> None:
    global _open_until
    _open_until = time.monotonic() + CIRCUIT_OPEN_SECONDS


def reset() -> None:
    """Close the breaker (tests, and health once the server answers again)."""
    global _open_until
    _open_until = 0.0


def available() -> bool:
    return settings.ENABLE_NEO4J and time.monotonic() >= _open_until


def _is_connection_error(exc: BaseException) -> bool:
    from neo4j.exceptions import DriverError, ServiceUnavailable, SessionExpired

    return isinstance(exc, ServiceUnavailable | SessionExpired | DriverError | OSError)


def cypher(query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
    """Run one Cypher statement and return its rows; a connection failure trips the breaker."""
    ensure_schema()
    from neomodel import db

    try:
        with tracing.backend_span("neo4j", "neo4j"):
            rows, _ = _within_read_timeout(lambda: db.cypher_query(query, params or {}))
    except Exception as exc:
        if _is_connection_error(exc):
            trip()
        raise
    return rows


def write(statements: list[tuple[str, dict[str, Any]]]) -> None:
    """Run several Cypher statements in one transaction (ArcadeDB needs it for atomicity)."""
    ensure_schema()
    from neomodel import db

    def run_all() -> None:
        with db.transaction:
            for query, params in statements:
                db.cypher_query(query, params)

    try:
        with tracing.backend_span("neo4j", "neo4j", **{"db.statements": len(statements)}):
            _within_read_timeout(run_all)
    except Exception as exc:
        if _is_connection_error(exc):
            trip()
        raise


def schema_statements() -> list[str]:
    """The graph's indexes as graph.nodes declares them (a unique constraint per
    ``unique_index`` property, an index per ``index`` one), each created only if missing:
    ``IF NOT EXISTS``, which Neo4j 5 and ArcadeDB both accept, under neomodel's own names,
    so a schema neomodel installed earlier counts as present."""
    from graph.nodes import NODE_CLASSES

    statements = []
    for cls in NODE_CLASSES:
        label = cls.__label__
        for name, prop in cls.defined_properties(aliases=False, rels=False).items():
            column = prop.get_db_property_name(name)
            if prop.unique_index:
                statements.append(
                    f"CREATE CONSTRAINT constraint_unique_{label}_{column} IF NOT EXISTS "
                    f"FOR (n:{label}) REQUIRE n.{column} IS UNIQUE")
            elif prop.index:
                statements.append(f"CREATE INDEX index_{label}_{column} IF NOT EXISTS "
                                  f"FOR (n:{label}) ON (n.{column})")
    return statements


def ensure_schema(*, force: bool = False) -> None:
    """Install the graph's unique indexes, once per process and server URL (``force``:
    again, for the full sync that repairs a graph server which lost its data).

    Every write and read asks for it first, so a new graph gets its indexes before its
    first node: without them each MERGE by id scans every node of its label, and a graph
    that only grows (one Session node per session) makes every outbox drain slower than
    the last. Idempotent, nothing dropped: any process may run it while others write.
    """
    global _schema_url
    configure()
    if _schema_url == _configured_url and not force:
        return
    from neomodel import db

    with _schema_lock:
        if _schema_url == _configured_url and not force:
            return
        for statement in schema_statements():
            try:
                _within_read_timeout(lambda statement=statement: db.cypher_query(statement))
            except Exception as exc:
                if _is_connection_error(exc):
                    trip()
                    raise
                # Another process creating the same index at this moment, or a server
                # that cannot build it (duplicates): the mirror works without, slower.
                logger.warning("graph schema: %s: %s", statement.split(" IF ")[0],
                               str(exc).splitlines()[0][:200] if str(exc) else exc)
        _schema_url = _configured_url


def health() -> str:
    try:
        cypher("RETURN 1")
    except Exception as exc:
        logger.warning("health check: graph: %s", exc)
        return f"error: {failure_reason(exc)}"
    reset()
    return "ok"
