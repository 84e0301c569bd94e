"""The save path's hand-made fast versions give what the slow general ones give (issue 24).

Each of these replaced a general tool that cost a save more than its database round trip:
the indenting JSON encoder, the unstorable-input scan with paths, datetime's log stamps,
the ORM's row loading. Equal output on varied input is their whole contract.
"""

from __future__ import annotations

import datetime
import decimal
import enum
import json
import logging
import random

import pytest
from django.db import DataError, connection

from contexts.models import TaskContext
from contexts.services.tasks import create_task
from foundation.backends.files import dumps_indented
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.tools.input_checks import MAX_DEPTH, _scan, scan_input
from foundation.observability.logformat import JsonFormatter, _timestamp


class Level(enum.IntEnum):
    HIGH = 3


class Ratio(float):
    pass


def leaf(rng: random.Random):
    return rng.choice([
        None, True, False, rng.randrange(-10**12, 10**12), rng.random() * 1e6, float("inf"),
        float("-inf"), float("nan"), -0.0, "".join(rng.choice('ab"\\\n\t\x00é€𝄞 \ud800')
                                                    for _ in range(rng.randrange(8))),
        decimal.Decimal("12.50"), datetime.datetime(2026, 1, 1), (1, "x"), Level.HIGH,
        Ratio(1.5)])


def document(rng: random.Random, depth: int = 0):
    kind = rng.randrange(4) if depth < 4 else 3
    if kind == 0:
        return {"".join(rng.choice('ké"') for _ in range(rng.randrange(4))):
                document(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 1:
        return [document(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 2:
        return tuple(document(rng, depth + 1) for _ in range(rng.randrange(3)))
    return leaf(rng)


def test_indented_json_is_json_dumps_text():
    rng = random.Random(24)
    documents = [document(rng) for _ in range(3000)] + [
        {}, [], "x", 1, None, {1: "a"}, {True: 1, "a": [1, {}]}, {None: 2}, {"a": {2.5: "b"}},
        {"taskId": "t", "immediateContext": {"workingOn": "x" * 1900, "blockers": []}}]
    for value in documents:
        assert dumps_indented(value) == json.dumps(value, indent=2, default=str)
    with pytest.raises(TypeError):  # as json.dumps refuses it
        dumps_indented({(1, 2): 3})


def test_the_quick_input_scan_agrees_with_the_scan_with_paths():
    rng = random.Random(11)

    def value(depth: int, deepest: int):
        kind = rng.randrange(5) if depth < deepest else 4
        if kind == 0:
            return {rng.choice(["a", "b", "k\x00", "\udfff", 1, "c"]): value(depth + 1, deepest)
                    for _ in range(rng.randrange(3))}
        if kind in (1, 2):
            return [value(depth + 1, deepest) for _ in range(rng.randrange(1, 3))]
        return rng.choice([None, True, 1, 2.5, float("nan"), float("inf"), "ok", "a\x00b",
                           "\ud800", "", (1, "a\x00")])

    def chain(length: int, end):
        for _ in range(length):
            end = rng.choice([[end], {"k": end}])
        return end

    inputs = [value(0, rng.choice([3, 8, 40])) for _ in range(20000)]
    inputs += [chain(length, end) for length in range(MAX_DEPTH - 2, MAX_DEPTH + 3)
               for end in (1, "a", [], {}, 2.0, "z\x00")]
    for arguments in inputs:
        assert scan_input(arguments) == _scan(arguments)


def test_log_stamps_are_datetimes_isoformat():
    rng = random.Random(3)
    stamps = [rng.uniform(0, 4e9) for _ in range(20000)]
    stamps += [rng.randrange(4 * 10**9) + edge for edge in
               (0.9999995, 0.9995, 0.0005, 0.5229998, 0.9999996, 0.4999995)]
    for created in stamps:
        assert _timestamp(created) == datetime.datetime.fromtimestamp(
            created, datetime.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    record = logging.makeLogRecord({"msg": "m", "created": 1768386600.25, "taskId": "t",
                                    "version": 5, "name": "x"})
    assert json.loads(JsonFormatter().format(record))["context"] == {"taskId": "t",
                                                                     "version": 5}


@pytest.mark.django_db
def test_a_model_from_a_row_is_the_one_the_orm_loads():
    create_task("fast-row", {"name": "Row", "keyFiles": ["a.py"], "score": 12.5,
                             "immediateContext": {"workingOn": "x"}})
    loaded = TaskContext.objects.get(task_id="fast-row")
    row = prepared.fetch_one(f"SELECT * FROM {qualified('task_contexts')} WHERE task_id = %s",
                             ["fast-row"])
    built = prepared.model_from_row(TaskContext, row)
    fields = [field.attname for field in TaskContext._meta.concrete_fields]
    assert {f: getattr(built, f) for f in fields} == {f: getattr(loaded, f) for f in fields}
    assert (built._state.adding, built._state.db) == (False, loaded._state.db)
    assert built.pk == loaded.pk and built == loaded


@pytest.mark.django_db
def test_lists_of_str_reach_postgres_as_psycopg_sends_them():
    rng = random.Random(7)
    alphabet = 'ab"\\{},; \t\né€𝄞'
    lists = [[], [None], [""], ["NULL", "null", " x ", "a,b", "{}", '"', "\\", "\\\""]]
    lists += [[None if rng.random() < 0.1 else
               "".join(rng.choice(alphabet) for _ in range(rng.randrange(6)))
               for _ in range(rng.randrange(6))] for _ in range(200)]
    for values in lists:
        with connection.cursor() as cursor:  # psycopg's own dumping of the list
            cursor.execute("SELECT %s::text[]", [values])
            by_psycopg = cursor.fetchone()[0]
        sent = prepared.fetch_one("SELECT %(v)s::text[] AS v, pg_typeof(%(v)s)::text AS t",
                                  {"v": values})
        assert sent["v"] == by_psycopg == values
        assert sent["t"] == "text[]"
    # A NUL is refused as psycopg refuses it; other lists are psycopg's to send.
    with pytest.raises(DataError):
        prepared.fetch_one("SELECT %s::text[] AS v", [["a\x00b"]])
    assert prepared.fetch_one("SELECT %s AS n, %s AS f", [[1, 2], [True, None]]) == {
        "n": [1, 2], "f": [True, None]}


# Autocommit (transaction=True): a failed statement must not abort a test's transaction
# around it, and the test closes its connection.
@pytest.mark.django_db(transaction=True)
def test_the_kept_cursor_reads_each_statement_as_a_new_cursor_would():
    """prepared's statements share one cursor per connection: each result is read with its
    own columns and types (not the last statement's), a failed statement leaves the next
    one working, and a new connection gets a cursor of its own."""
    first = prepared.fetch_one("SELECT 1 AS n, now() AS at", [])
    assert first["n"] == 1 and first["at"].tzinfo is not None
    assert prepared.fetch_one("SELECT 'x' AS s, '{\"a\": [1]}'::jsonb AS j, NULL::int AS n",
                              []) == {"s": "x", "j": '{"a": [1]}', "n": None}
    with pytest.raises(DataError):
        prepared.fetch_one("SELECT 1 / %s AS n", [0])
    assert prepared.fetch_all("SELECT g FROM generate_series(1, 3) AS g", []) == [
        (1,), (2,), (3,)]
    kept = prepared._kept_cursor(connection.connection)
    assert prepared._kept_cursor(connection.connection) is kept
    connection.close()
    assert prepared.fetch_one("SELECT 2 AS n", []) == {"n": 2}
    assert prepared._kept_cursor(connection.connection) is not kept
