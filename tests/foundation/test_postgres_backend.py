"""The PostgreSQL backend's own parts (foundation/backends/postgres/base.py): timestamps read
by psycopg's loader come back as Django's, and statements are counted in django-prometheus's
query metrics as its own cursor counted them."""

from __future__ import annotations

import datetime

import psycopg
import pytest
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from prometheus_client import REGISTRY

from foundation.backends.postgres.base import TIMESTAMPTZ_OID, UtcTimestamptzLoader
from sessions.models import ActiveSession

pytestmark = pytest.mark.django_db
LABELS = {"alias": "default", "vendor": "postgresql"}


def sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, {**LABELS, **labels}) or 0.0


def test_timestamps_read_are_aware_utc_as_django_gives_them():
    connection.ensure_connection()
    assert connection.connection.adapters.get_loader(
        TIMESTAMPTZ_OID, psycopg.pq.Format.TEXT) is UtcTimestamptzLoader
    written = datetime.datetime(2026, 3, 29, 1, 30, 15, 123456,
                                tzinfo=datetime.timezone(datetime.timedelta(hours=5)))
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::timestamptz, NULL::timestamptz, now()", [written])
        read, missing, now = cursor.fetchone()
    assert read == written and read.tzinfo is datetime.UTC
    assert read.utcoffset() == datetime.timedelta(0)
    assert missing is None and now.tzinfo is datetime.UTC
    # Through a psycopg cursor of the same connection (foundation.core.prepared's way) too.
    with psycopg.Cursor(connection.connection) as cursor:
        cursor.execute("SELECT %s::timestamptz", [written], prepare=True)
        assert cursor.fetchone()[0].tzinfo is datetime.UTC
    # And through the ORM, as models compare them.
    ActiveSession.objects.create(session_id="tz-1", started_at=written)
    stored = ActiveSession.objects.get(session_id="tz-1").started_at
    assert stored == written and timezone.is_aware(stored) and stored.tzinfo is datetime.UTC


def test_statements_and_their_failures_are_counted_by_type():
    executed = sample("django_db_execute_total")
    timed = sample("django_db_query_duration_seconds_count")
    failed = sample("django_db_errors_total", type="DivisionByZero")
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.executemany("SELECT %s", [[1], [2], [3]])
    assert sample("django_db_execute_total") == executed + 4
    assert sample("django_db_query_duration_seconds_count") == timed + 2
    # In a savepoint of its own: the test's transaction goes on after the failure.
    with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")
    assert sample("django_db_errors_total", type="DivisionByZero") == failed + 1
