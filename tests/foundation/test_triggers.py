"""The spec tables' triggers and constraints, exercised through raw SQL as another program would."""

from __future__ import annotations

import threading

import psycopg
import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.utils import DatabaseError

from foundation.core.db import qualified

TASKS = qualified("task_contexts")
VERSIONS = qualified("context_versions")


def sql(query: str, params=None):
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchall() if cursor.description else cursor.rowcount


def insert_task(task_id: str = "t1", **columns) -> None:
    names = ["task_id", "name", *columns]
    values = [task_id, f"Task {task_id}", *columns.values()]
    placeholders = ", ".join(["%s"] * len(values))
    sql(f"INSERT INTO {TASKS} ({', '.join(names)}) VALUES ({placeholders})", values)


def versions(task_id: str = "t1"):
    return sql(f"SELECT version, change_type, change_summary, session_id, created_by, "
               f"snapshot->>'current_phase' FROM {VERSIONS} WHERE task_id = %s ORDER BY version",
               [task_id])


def test_defaults_are_database_defaults(db):
    insert_task()
    row = sql(f"SELECT status, priority, iteration, locked_elements::text, version, created_at "
              f"IS NOT NULL, id IS NOT NULL FROM {TASKS} WHERE task_id = 't1'")[0]
    assert row == ("pending", 50, 0, "[]", 1, True, True)


def test_insert_records_version_one(db):
    insert_task(current_phase="design")
    assert versions() == [(1, "auto_save", None, None, None, "design")]


def test_every_content_field_change_creates_a_version(db):
    insert_task()
    changes = [
        ("name", "'Renamed'"), ("description", "'why'"), ("agent_type", "'coder'"),
        ("status", "'in_progress'"), ("priority", "70"), ("current_phase", "'build'"),
        ("iteration", "3"), ("score", "88.5"), ("locked_elements", "'[\"keyFiles\"]'"),
        ("immediate_context", "'{\"workingOn\": \"x\"}'"), ("key_files", "'[\"a.py\"]'"),
        ("technical_decisions", "'[\"pg\"]'"), ("resume_prompt", "'resume'"),
        ("keywords", "'[\"k\"]'"), ("token_estimate", "1200"),
    ]
    for column, value in changes:
        sql(f"UPDATE {TASKS} SET {column} = {value} WHERE task_id = 't1'")
    numbers = [v[0] for v in versions()]
    assert numbers == list(range(1, len(changes) + 2))
    assert sql(f"SELECT version FROM {TASKS} WHERE task_id = 't1'")[0][0] == len(changes) + 1


def test_timestamp_only_updates_create_no_version(db):
    insert_task()
    sql(f"UPDATE {TASKS} SET last_session_at = now() WHERE task_id = 't1'")
    sql(f"UPDATE {TASKS} SET updated_at = now() - interval '1 day' WHERE task_id = 't1'")
    sql(f"UPDATE {TASKS} SET name = name WHERE task_id = 't1'")  # a no-op write
    assert [v[0] for v in versions()] == [1]
    assert sql(f"SELECT version FROM {TASKS} WHERE task_id = 't1'")[0][0] == 1


def test_a_version_a_statement_writes_itself_is_not_taken(db):
    # A version row is written when the version moved, and only the BEFORE trigger moves
    # it: a version set by the statement neither makes a row nor skips a number.
    insert_task()
    sql(f"UPDATE {TASKS} SET version = 7 WHERE task_id = 't1'")
    sql(f"UPDATE {TASKS} SET version = 1, last_session_at = now() WHERE task_id = 't1'")
    assert [v[0] for v in versions()] == [1]
    sql(f"UPDATE {TASKS} SET version = 9, current_phase = 'p2' WHERE task_id = 't1'")
    assert [v[0] for v in versions()] == [1, 2]
    assert versions()[-1][5] == "p2"
    assert sql(f"SELECT version FROM {TASKS} WHERE task_id = 't1'")[0][0] == 2


def test_updated_at_is_set_by_trigger(db):
    insert_task()
    sql(f"UPDATE {TASKS} SET updated_at = '2000-01-01', current_phase = 'x' WHERE task_id = 't1'")
    year = sql(f"SELECT extract(year FROM updated_at) FROM {TASKS} WHERE task_id = 't1'")[0][0]
    assert year > 2000


def test_change_context_reaches_the_trigger_and_stays_in_its_transaction(db):
    from foundation.core.db import set_change_context

    insert_task()
    with transaction.atomic():
        set_change_context(change_type="manual", change_summary="phase moved",
                           session_id="session-1", created_by="agent-7")
        sql(f"UPDATE {TASKS} SET current_phase = 'p2' WHERE task_id = 't1'")
    sql(f"UPDATE {TASKS} SET current_phase = 'p3' WHERE task_id = 't1'")
    rows = versions()
    assert rows[1] == (2, "manual", "phase moved", "session-1", "agent-7", "p2")
    # pytest's db fixture wraps the test in one transaction, so the settings would still be
    # visible here; reset explicitly to show an unset context falls back to auto_save.
    with transaction.atomic():
        set_change_context()
        sql(f"UPDATE {TASKS} SET current_phase = 'p4' WHERE task_id = 't1'")
    assert versions()[-1][1:5] == ("auto_save", None, None, None)


def test_trigger_works_without_the_schema_on_search_path(db):
    insert_task()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL search_path TO pg_catalog")
        cursor.execute(f"UPDATE {TASKS} SET iteration = 5 WHERE task_id = 't1'")
        cursor.execute("RESET search_path")
    assert [v[0] for v in versions()] == [1, 2]


def test_context_versions_are_immutable(db):
    insert_task()
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
        sql(f"UPDATE {VERSIONS} SET change_summary = 'tampered' WHERE task_id = 't1'")
    with pytest.raises(DatabaseError, match="immutable"), transaction.atomic():
        sql(f"DELETE FROM {VERSIONS} WHERE task_id = 't1'")
    with transaction.atomic():
        sql("SELECT set_config('orchestrator.allow_version_pruning', 'on', true)")
        assert sql(f"DELETE FROM {VERSIONS} WHERE task_id = 't1'") == 1


@pytest.mark.parametrize("statement", [
    f"INSERT INTO {qualified('task_contexts')} (task_id, name) VALUES ('dup', 'a'), ('dup', 'b')",
    f"INSERT INTO {qualified('task_contexts')} (task_id) VALUES ('no-name')",
    f"INSERT INTO {qualified('checkpoints')} (checkpoint_id, label, snapshot) "
    "VALUES ('cp', 'l', '{}')",
    f"INSERT INTO {qualified('task_relationships')} (source_task_id, target_task_id, "
    "relationship_type) VALUES ('a', 'b', 'blocks'), ('a', 'b', 'blocks')",
    f"INSERT INTO {qualified('active_sessions')} (session_id) VALUES ('s'), ('s')",
    f"INSERT INTO {qualified('context_conflicts')} (task_a_id, conflict_type, severity) "
    "VALUES ('a', 'file_conflict', 'high')",
    f"INSERT INTO {qualified('global_context')} (project_id, project_name) "
    "VALUES ('story-portal-app', 'again')",
])
def test_constraints_refuse_bad_rows(db, statement):
    with pytest.raises(IntegrityError), transaction.atomic():
        sql(statement)


def test_context_versions_unique_task_version(db):
    insert_task()
    with pytest.raises(DatabaseError), transaction.atomic():
        sql(f"INSERT INTO {VERSIONS} (task_id, version, snapshot) VALUES ('t1', 1, '{{}}')")


def test_global_context_versions_itself(db):
    table = qualified("global_context")
    sql(f"UPDATE {table} SET hard_rules = '[\"no force push\"]' WHERE project_id = %s",
        [settings.MCP_PROJECT_ID])
    assert sql(f"SELECT version FROM {table} WHERE project_id = %s",
               [settings.MCP_PROJECT_ID])[0][0] == 2


def _dsn() -> str:
    db = settings.DATABASES["default"]
    return psycopg.conninfo.make_conninfo(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None,
        host=db["HOST"], port=db["PORT"] or None)


def test_concurrent_updates_get_distinct_consecutive_versions(transactional_db):
    insert_task()
    writers, per_writer = 8, 10
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            with psycopg.connect(_dsn(), autocommit=True) as conn:
                barrier.wait()
                for i in range(per_writer):
                    conn.execute(f"UPDATE {TASKS} SET iteration = iteration + 1, "
                                 "current_phase = %s WHERE task_id = 't1'", [f"w{n}-{i}"])
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    total = writers * per_writer
    version, iteration = sql(f"SELECT version, iteration FROM {TASKS} WHERE task_id = 't1'")[0]
    assert iteration == total  # no lost update
    assert version == total + 1
    assert [v[0] for v in versions()] == list(range(1, total + 2))
