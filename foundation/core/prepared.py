"""Prepared statements on Django's own connection, for the few hottest queries.

Django's psycopg backend binds parameters on the client, so Postgres parses and plans
every statement it is sent. For the save's one UPDATE (a locking subquery, a guard,
RETURNING with an EXISTS) planning cost more than executing: measured here, 0.95 ms per
save unprepared against 0.59 ms prepared on the same connection, and building the model
through ``QuerySet.raw`` another ~0.25 ms. So the hot statements go through a server-side
binding cursor of the same psycopg connection with ``prepare=True`` (psycopg keeps a
per-connection cache of prepared statements, keyed by the query text), and the row
becomes a model instance with the fields' own converters.

Same connection, so the same transaction state, statement_timeout and time zone; psycopg
errors are wrapped into Django's exceptions as for any query; each statement gets its
``postgres <VERB>`` span as Django's own do (``tracing.statement_span``). Not counted by
django-prometheus's query metrics (they wrap Django's cursor); the callers keep their
own save metrics.
"""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import psycopg
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Model, signals
from django.db.models.base import ModelState

from foundation.observability import tracing

# A statement and its named parameters, as a caller hands one to be sent (prepared).
Statement = tuple[str, dict[str, Any]]
# The attribute of a psycopg connection holding its kept cursor (_kept_cursor).
_KEPT = "_orchestrator_kept_cursor"


@contextlib.contextmanager
def _cursor(sql: str) -> Iterator[tuple[Any, psycopg.Cursor]]:
    """The thread's Django connection (usable) and a server-binding psycopg cursor on it,
    inside ``sql``'s span and Django's error wrapping."""
    # The thread's connection looked up once: each attribute of django.db.connection is
    # a lookup in the thread's connections of its own.
    db = connections[DEFAULT_DB_ALIAS]
    # As Django's own cursors do: a pooled connection the server cut is replaced first
    # (CONN_HEALTH_CHECKS; ensure_connection alone would hand it over dead).
    db.close_if_health_check_failed()
    db.ensure_connection()
    with tracing.statement_span(sql), db.wrap_database_errors:
        yield db, _kept_cursor(db.connection)


def _kept_cursor(connection: psycopg.Connection) -> psycopg.Cursor:
    """The psycopg connection's own server-binding cursor, made once and kept on it.

    Why: a cursor makes a loader for each column of each result it reads, and a new
    cursor per statement made them again every time; kept, it makes them once per
    column type. Measured in-process on a 13-column RETURNING *: 83 us of CPU per
    statement with a new cursor, 62 us with a kept one (medians of 8 alternated runs).
    A connection serves one thread at a time (Django's per thread, a pooled one per
    loan), so its cursor does too; it goes when the connection goes."""
    cursor = getattr(connection, _KEPT, None)
    if cursor is None or cursor.closed:
        cursor = psycopg.Cursor(connection)
        setattr(connection, _KEPT, cursor)
    return cursor


def _text_array(values: list[Any]) -> Any:
    """A list of str (None for NULL) as the text of its array, what psycopg sends for it:
    the same value with the same type (unknown, Postgres casts it as the statement says).
    Any other list as it is.

    Why: psycopg dumps a list in Python, looking for the type of its elements and making a
    dumper for each list, ~20 us a list (100 us for the five lists of a record_activity
    flush); this is a few microseconds, and the str is dumped by psycopg's C code. Every
    element is quoted, which Postgres reads as psycopg's quoting only where needed."""
    for value in values:
        if value is not None and type(value) is not str:
            return values
    return "{" + ",".join("NULL" if value is None else
                          '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
                          for value in values) + "}"


def _bound(params: Sequence[Any] | Mapping[str, Any]) -> Sequence[Any] | Mapping[str, Any]:
    """``params`` with their lists of str as ``_text_array`` gives them."""
    if isinstance(params, Mapping):
        return {name: _text_array(value) if type(value) is list else value
                for name, value in params.items()}
    return [_text_array(value) if type(value) is list else value for value in params]


def _first_row(sql: str, cursor: psycopg.Cursor) -> dict[str, Any] | None:
    values = cursor.fetchone()
    if values is None:
        return None
    return dict(zip(_column_names(sql, cursor.pgresult), values, strict=True))


def fetch_one(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> dict[str, Any] | None:
    """Run ``sql`` (``%s`` placeholders with a sequence, ``%(name)s`` with a mapping)
    prepared; its first row by column name, or None."""
    with _cursor(sql) as (_, cursor):
        cursor.execute(sql, _bound(params), prepare=True)
        return _first_row(sql, cursor)


def fetch_all(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """Run ``sql`` prepared, as ``fetch_one`` does; every row, as tuples."""
    with _cursor(sql) as (_, cursor):
        cursor.execute(sql, _bound(params), prepare=True)
        return cursor.fetchall()


def execute(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> int:
    """Run ``sql`` prepared, as ``fetch_one`` does, for its effect: the rows it touched."""
    with _cursor(sql) as (_, cursor):
        cursor.execute(sql, _bound(params), prepare=True)
        return cursor.rowcount


def fetch_all_each(statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]]
                   ) -> list[list[tuple[Any, ...]]]:
    """Run each (sql, params) prepared, in order and in one round trip (psycopg's pipeline
    mode); every statement's rows, as tuples. In the caller's transaction when there is
    one (each statement sees what the ones before it did, and their locks); outside one,
    one transaction as ``fetch_one_after``'s."""
    with _each(statements) as cursors:
        return [cursor.fetchall() for cursor in cursors]


def fetch_first_each(statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]]
                     ) -> list[dict[str, Any] | None]:
    """``fetch_all_each``, returning each statement's first row by column name (or None)."""
    with _each(statements) as cursors:
        return [_first_row(sql, cursor)
                for cursor, (sql, _) in zip(cursors, statements, strict=True)]


@contextlib.contextmanager
def _each(statements: Sequence[tuple[str, Sequence[Any] | Mapping[str, Any]]]
          ) -> Iterator[list[psycopg.Cursor]]:
    """A cursor per statement, each run prepared in one pipeline, holding its rows."""
    with _cursor(statements[-1][0]) as (db, first):
        cursors = [first] + [psycopg.Cursor(db.connection) for _ in statements[1:]]
        try:
            with db.connection.pipeline():
                for cursor, (sql, params) in zip(cursors, statements, strict=True):
                    cursor.execute(sql, _bound(params), prepare=True)
            yield cursors
        finally:
            for cursor in cursors[1:]:
                cursor.close()


def fetch_one_after(statements: Sequence[str],
                    params: Mapping[str, Any]) -> dict[str, Any] | None:
    """Run ``statements`` (``%(name)s`` placeholders, each taking what it names from
    ``params``) prepared, in one round trip (psycopg's pipeline mode), and return the last
    one's first row by column name, or None. Outside a transaction block they are one
    transaction, as the statements of one simple query are (the extended protocol commits
    at the pipeline's Sync), and under read committed each sees what committed before it
    started; unlike a simple query, each statement is parsed and planned once per
    connection."""
    with _pipelined(statements, params) as cursor:
        return _first_row(statements[-1], cursor)


def fetch_all_after(statements: Sequence[str],
                    params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """``fetch_one_after``, returning every row of the last statement (as tuples)."""
    with _pipelined(statements, params) as cursor:
        return cursor.fetchall()


@contextlib.contextmanager
def _pipelined(statements: Sequence[str], params: Mapping[str, Any]) -> Iterator[Any]:
    """``statements`` run prepared in one pipeline; the cursor holding the last one's rows."""
    bound = _bound(params)
    with _cursor(statements[-1]) as (db, cursor):
        with db.connection.pipeline():
            for sql in statements:
                cursor.execute(sql, bound, prepare=True)
        yield cursor


# Column names by statement. Reading them from each result (a Column object each for
# ``cursor.description``, or a decode each) cost more than decoding the row's values;
# a statement's text fixes its columns, and the count is checked anyway.
_names: dict[str, tuple[int, tuple[str, ...]]] = {}


def _column_names(sql: str, result: Any) -> tuple[str, ...]:
    count = result.nfields
    known = _names.get(sql)
    if known is None or known[0] != count:
        known = _names[sql] = (count, tuple(result.fname(i).decode() for i in range(count)))
    return known[1]


def model_from_row(model: type[Model], row: dict[str, Any]) -> Model:
    """An instance of ``model`` as the ORM would load it from ``row`` (column -> value);
    columns that are not the model's fields are ignored."""
    db = connections[DEFAULT_DB_ALIAS]
    attnames, columns, converted = _loaders(model, db.alias)
    values = list(columns(row))
    for index, converters in converted:
        value = values[index]
        for converter in converters:
            value = converter(value, None, db)
        values[index] = value
    if model.__init__ is not Model.__init__ or signals.pre_init.receivers \
            or signals.post_init.receivers:
        return model.from_db(db.alias, attnames, values)
    # What Model.__init__ does with a value for every field, when nothing listens to its
    # signals and the model does not override it: one setattr per field, which for a
    # 30-column row cost more than the rest of this function.
    instance = model.__new__(model)
    instance.__dict__.update(zip(attnames, values, strict=True))
    instance._state = state = ModelState()
    state.adding, state.db = False, db.alias
    return instance


@functools.cache
def _loaders(model: type[Model], db: str) -> tuple[
        tuple[str, ...], Callable[[dict[str, Any]], tuple[Any, ...]],
        tuple[tuple[int, tuple[Callable[..., Any], ...]], ...]]:
    """The attnames of ``model``'s concrete fields, a getter of their columns' values from
    a row, and (index, converters) of the fields that have converters: worked out once
    per model and database, not per row."""
    fields = model._meta.concrete_fields
    # Field.get_db_converters is Django's (5.2) own; django-stubs does not declare it.
    converted = tuple((index, tuple(converters)) for index, field in enumerate(fields)
                      if (converters := field.get_db_converters(  # type: ignore[attr-defined]
                          connections[db])))
    columns = [field.column for field in fields]
    getter = (operator.itemgetter(*columns) if len(columns) > 1
              else lambda row: (row[columns[0]],))
    return tuple(field.attname for field in fields), getter, converted
