"""A deadlock's victim is run again: two real transactions taking two locks in opposite
orders on the real Postgres."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.db import OperationalError, connection, transaction

from foundation.core.db import retried_statement, retried_transaction
from tests.processes import database_url
from tests.waiting import lock_wait

KEYS = (0x7465_7374_0001, 0x7465_7374_0002)


def raise_deadlock() -> None:
    """What Postgres raises in a deadlock's victim (SQLSTATE 40P01), from a real query."""
    with connection.cursor() as cursor:
        cursor.execute("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '40P01'; END $$")


@pytest.mark.django_db(transaction=True)
def test_both_sides_of_a_deadlock_get_through():
    both_hold_one = threading.Barrier(2, timeout=10)
    runs = {0: 0, 1: 0}
    results: dict[int, object] = {}

    def work(side: int) -> str:
        runs[side] += 1
        first, second = KEYS if side == 0 else KEYS[::-1]
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [first])
            if runs[side] == 1:
                both_hold_one.wait()
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", [second])
        return f"side {side} done"

    def run(side: int) -> None:
        try:
            results[side] = retried_transaction(lambda: work(side))
        except Exception as exc:  # reported by the assertion below
            results[side] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(side,)) for side in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert results == {0: "side 0 done", 1: "side 1 done"}
    assert sorted(runs.values()) == [1, 2]  # Postgres aborted one of them; it ran again


@pytest.mark.django_db(transaction=True)
def test_other_errors_and_a_callers_transaction_are_not_retried():
    calls = []

    def failing() -> None:
        calls.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1/0")

    with pytest.raises(Exception, match="division by zero"):
        retried_transaction(failing)
    assert len(calls) == 1

    def deadlock_victim() -> None:
        calls.append(1)
        raise_deadlock()

    calls.clear()
    with pytest.raises(OperationalError):
        retried_transaction(deadlock_victim)
    assert len(calls) == 3  # RETRY_ATTEMPTS
    calls.clear()
    with pytest.raises(OperationalError), transaction.atomic():
        retried_transaction(deadlock_victim)
    assert len(calls) == 1  # the caller's transaction is the one to run again


@pytest.mark.django_db(transaction=True)
def test_a_statement_that_is_its_own_transaction_is_run_again_as_a_deadlocks_victim():
    """retried_statement: one statement in autocommit that locks A then B, against a
    transaction of another connection that holds B and then asks for A. The statement
    waits first, so its deadlock check fires first and Postgres aborts it; it runs again
    once the other transaction is through."""
    runs = []
    other_holds_b = threading.Event()
    statement_waited: list[bool] = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        statement_pid = cursor.fetchone()[0]

    def other_side() -> None:
        with psycopg.connect(database_url(), autocommit=False) as other:
            other.execute("SELECT pg_advisory_xact_lock(%s)", [KEYS[1]])
            other_holds_b.set()
            # Only once the statement below holds A and waits for B does this ask for A.
            statement_waited.append(lock_wait(other.info.backend_pid, statement_pid))
            other.execute("SELECT pg_advisory_xact_lock(%s)", [KEYS[0]])
            other.commit()

    def statement() -> int:
        runs.append(1)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s), pg_advisory_xact_lock(%s)",
                           list(KEYS))
        return len(runs)

    thread = threading.Thread(target=other_side)
    thread.start()
    assert other_holds_b.wait(10)
    try:
        assert retried_statement(statement) == 2
    finally:
        thread.join(30)
    assert statement_waited == [True]


@pytest.mark.django_db(transaction=True)
def test_a_statement_inside_a_callers_transaction_runs_once():
    calls = []

    def deadlock_victim() -> None:
        calls.append(1)
        raise_deadlock()

    with pytest.raises(OperationalError):
        retried_statement(deadlock_victim)
    assert len(calls) == 3
    calls.clear()
    with pytest.raises(OperationalError), transaction.atomic():
        retried_statement(deadlock_victim)
    assert len(calls) == 1
