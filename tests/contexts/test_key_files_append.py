"""keyFiles appended from edits: one statement, in autocommit or inside a caller's
transaction (published when it commits), the long way when a lock may object, and the
same result either way."""

from __future__ import annotations

import logging
import threading

import psycopg
import pytest
from django.db import connection, transaction

from bench.roundtrips import PostgresTrace
from contexts.models import ContextVersion, TaskContext
from contexts.services.cache import read_cached_task
from contexts.services.key_files import append_key_files
from contexts.services.tasks import create_task
from contexts.services.validation import LIST_LIMITS
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError
from locks import services as locks
from tests.processes import database_url
from tests.waiting import lock_wait

pytestmark = pytest.mark.django_db(transaction=True)
LIMIT = LIST_LIMITS["keyFiles"][0]


def versions(task_id: str) -> list[tuple[str, str, str]]:
    return [(v.change_type, v.change_summary, v.session_id) for v in
            ContextVersion.objects.filter(task_id=task_id).order_by("version")][1:]


def test_an_append_is_one_round_trip_and_one_version(settings):
    settings.ENABLE_NEO4J = False  # the outbox drain is not the request's work
    create_task("kf-1", {"name": "Parser", "keyFiles": ["a.py"]})
    append_key_files("kf-1", ["prepare.py"], session_id="s-1")  # prepares the statement
    trace = PostgresTrace()
    with trace.capture():
        added = append_key_files("kf-1", ["b.py", "a.py", "b.py", "c.py"], session_id="s-1")
    assert added == ["b.py", "c.py"]
    assert trace.round_trips() == 1, trace.statements()
    task = TaskContext.objects.get(task_id="kf-1")
    assert task.key_files == ["a.py", "prepare.py", "b.py", "c.py"]
    assert versions("kf-1")[-1] == ("auto_save", "keyFiles from edits: b.py, a.py, b.py, c.py",
                                    "s-1")
    # Nothing new: nothing written, no version.
    before = ContextVersion.objects.filter(task_id="kf-1").count()
    assert append_key_files("kf-1", ["a.py", "c.py"], session_id="s-1") == []
    assert ContextVersion.objects.filter(task_id="kf-1").count() == before


@pytest.mark.parametrize("in_transaction", [False, True],
                         ids=["autocommit", "in a caller's transaction"])
def test_both_ways_stop_at_the_limit_and_keep_the_order(in_transaction):
    create_task("kf-2", {"name": "Full", "keyFiles": [f"f{n}.py" for n in range(LIMIT - 2)]})
    paths = ["f3.py", "new1.py", "new2.py", "new3.py"]
    if in_transaction:
        with transaction.atomic():
            added = append_key_files("kf-2", paths, session_id="s-2")
    else:
        added = append_key_files("kf-2", paths, session_id="s-2")
    assert added == ["new1.py", "new2.py"]
    key_files = TaskContext.objects.get(task_id="kf-2").key_files
    assert len(key_files) == LIMIT and key_files[-2:] == ["new1.py", "new2.py"]
    assert append_key_files("kf-2", ["new4.py"], session_id="s-2") == []


def test_in_a_callers_transaction_an_append_is_one_statement_published_at_commit(settings):
    """The claim-overlap recorder appends to both tasks of an overlap in its batch's
    transaction: each append, and each finding that there is nothing to add, is one
    statement (no savepoint, no separate lock), and Redis hears of it only once the
    transaction commits."""
    settings.ENABLE_NEO4J = False  # the outbox drain is not the append's work
    create_task("kf-8", {"name": "Batch", "keyFiles": ["a.py"]})
    append_key_files("kf-8", ["prepare.py"], session_id="s-8")  # prepares the statement
    trace = PostgresTrace()
    with transaction.atomic():
        assert TaskContext.objects.filter(task_id="kf-8").exists()  # BEGIN sent before
        with trace.capture():
            added = append_key_files("kf-8", ["b.py", "a.py"], session_id="s-8")
            nothing = append_key_files("kf-8", ["a.py", "b.py"], session_id="s-8")
        assert "b.py" not in read_cached_task("kf-8")["keyFiles"]  # not committed yet
    assert (added, nothing) == (["b.py"], [])
    assert trace.round_trips() == 2, trace.statements()
    assert read_cached_task("kf-8")["keyFiles"] == ["a.py", "prepare.py", "b.py"]
    assert versions("kf-8")[-1] == ("auto_save", "keyFiles from edits: b.py, a.py", "s-8")


def test_a_task_without_a_list_gets_one():
    create_task("kf-3", {"name": "Empty"})
    with connection.cursor() as cursor:
        cursor.execute("UPDATE mcp_contexts.task_contexts SET key_files = 'null'::jsonb "
                       "WHERE task_id = 'kf-3'")
    assert append_key_files("kf-3", ["x.py"], session_id=None) == ["x.py"]
    assert TaskContext.objects.get(task_id="kf-3").key_files == ["x.py"]


def test_locks_are_honoured():
    create_task("kf-4", {"name": "Locked"})
    locks.acquire_lock("kf-4", "holder")
    assert append_key_files("kf-4", ["x.py"], session_id="intruder") == []
    assert append_key_files("kf-4", ["y.py"], session_id="holder") == ["y.py"]
    create_task("kf-5", {"name": "Elements", "lockedElements": ["keyFiles"]})
    assert append_key_files("kf-5", ["x.py"], session_id="anyone") == []
    assert TaskContext.objects.get(task_id="kf-4").key_files == ["y.py"]
    assert not TaskContext.objects.get(task_id="kf-5").key_files


def test_bad_paths_and_unknown_tasks_are_refused_before_anything_is_written():
    create_task("kf-6", {"name": "Strict"})
    with pytest.raises(OrchestratorError) as too_long:
        append_key_files("kf-6", ["ok.py", "x" * 1001], session_id=None)
    assert too_long.value.code == "E1612"
    assert not TaskContext.objects.get(task_id="kf-6").key_files
    with pytest.raises(OrchestratorError) as missing:
        append_key_files("kf-missing", ["a.py"], session_id=None)
    assert missing.value.code == "E1610"


def test_concurrent_appends_list_each_path_once():
    create_task("kf-7", {"name": "Busy"})
    barrier = threading.Barrier(8)
    added: dict[int, list[str]] = {}
    errors: list[BaseException] = []

    def append(n: int) -> None:
        barrier.wait()
        try:
            added[n] = append_key_files("kf-7", [f"own{n}.py", "shared.py"],
                                        session_id=f"s{n}")
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    key_files = TaskContext.objects.get(task_id="kf-7").key_files
    assert sorted(key_files) == sorted([f"own{n}.py" for n in range(8)] + ["shared.py"])
    # Each path is reported added by exactly one of the writers.
    reported = [path for paths in added.values() for path in paths]
    assert sorted(reported) == sorted(key_files)


def test_an_append_aborted_to_break_a_deadlock_runs_again(caplog):
    """The cycle seen at 3,000 agents, on the real Postgres: another transaction writes a
    version of one task of the project (so holds the project's storage count row of its
    backend's slot, pid modulo 16) and then locks a second task, while the one-statement
    append holds that second task and waits for the same count row. Postgres aborts the
    append (it waited first); it runs again once the other transaction is through."""
    create_task("kf-y", {"name": "Written first by the other transaction"})
    create_task("kf-x", {"name": "Appended to"})
    pid_known, other_holds_count = threading.Event(), threading.Event()
    appender: dict[str, object] = {}

    def append() -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                appender["pid"] = cursor.fetchone()[0]
            pid_known.set()
            assert other_holds_count.wait(10)
            appender["added"] = append_key_files("kf-x", ["shared.py"], session_id="s-x")
        except Exception as exc:  # asserted below
            appender["error"] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=append)
    thread.start()
    assert pid_known.wait(10)
    spare, other = [], None
    try:
        while other is None:  # a backend sharing the appender's storage slot
            candidate = psycopg.connect(database_url())
            if candidate.info.backend_pid % 16 == appender["pid"] % 16:
                other = candidate
            else:
                spare.append(candidate)
        with caplog.at_level(logging.INFO, logger="orchestrator"):
            other.execute(f"UPDATE {qualified('task_contexts')} SET current_phase = 'other' "
                          "WHERE task_id = 'kf-y'")
            other_holds_count.set()
            # the append holds kf-x and waits for the count row: only then does this ask
            # for kf-x
            assert lock_wait(other.info.backend_pid, appender["pid"])
            other.execute(f"SELECT 1 FROM {qualified('task_contexts')} "
                          "WHERE task_id = 'kf-x' FOR UPDATE")
            other.commit()
            thread.join(30)
    finally:
        for conn in [*spare, *([other] if other else [])]:
            conn.close()
    assert "error" not in appender, appender.get("error")
    assert appender["added"] == ["shared.py"]
    assert TaskContext.objects.get(task_id="kf-x").key_files == ["shared.py"]
    assert TaskContext.objects.get(task_id="kf-y").current_phase == "other"
    assert "transaction retried after 40P01" in caplog.text
