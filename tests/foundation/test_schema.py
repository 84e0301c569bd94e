"""The spec's migration checklist (13.1.2) and reversible migrations."""

from __future__ import annotations

from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

SPEC_TABLES = {"task_contexts", "context_versions", "active_sessions", "checkpoints",
               "global_context", "context_conflicts", "task_relationships"}
SPEC_FUNCTIONS = {"update_updated_at", "increment_version", "save_context_version"}
SPEC_TRIGGERS = {
    ("task_contexts", "update_task_contexts_timestamp"),
    ("task_contexts", "increment_task_version"),
    ("task_contexts", "auto_save_context_version"),
    ("global_context", "update_global_context_timestamp"),
    ("global_context", "increment_global_version"),
}


def catalog(schema: str):
    with connection.cursor() as cursor:
        cursor.execute("SELECT table_name FROM information_schema.tables "
                       "WHERE table_schema = %s", [schema])
        tables = {r[0] for r in cursor.fetchall()}
        cursor.execute("SELECT p.proname FROM pg_proc p JOIN pg_namespace n "
                       "ON n.oid = p.pronamespace WHERE n.nspname = %s", [schema])
        functions = {r[0] for r in cursor.fetchall()}
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %s", [schema])
        indexes = cursor.fetchone()[0]
        cursor.execute("SELECT event_object_table, trigger_name FROM information_schema.triggers "
                       "WHERE trigger_schema = %s", [schema])
        triggers = {tuple(r) for r in cursor.fetchall()}
        cursor.execute("SELECT count(*) FROM pg_indexes WHERE schemaname = %s "
                       "AND indexname LIKE 'idx\\_%%'", [schema])
        spec_indexes = cursor.fetchone()[0]
    return tables, functions, indexes, triggers, spec_indexes


def test_checklist_holds(db, settings):
    tables, functions, indexes, triggers, spec_indexes = catalog(settings.MCP_SCHEMA)
    assert tables == SPEC_TABLES
    assert functions == SPEC_FUNCTIONS
    assert indexes >= 17
    # The 23 idx_* of 13.1.1, each now led by project_id (issue 19), plus the
    # sessions' started_at index the project console lists by.
    assert spec_indexes == 24
    assert triggers >= SPEC_TRIGGERS


PER_PROJECT_TABLES = SPEC_TABLES - {"global_context"}


def test_project_id_leads_every_index_of_a_per_project_table(db, settings):
    # Ready to shard (issue 19): a table distributed by project_id can only
    # keep indexes whose first column is project_id useful per shard.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tablename, indexname, indexdef FROM pg_indexes "
            "WHERE schemaname = %s AND indexname LIKE 'idx\\_%%'", [settings.MCP_SCHEMA])
        rows = cursor.fetchall()
    per_project = [r for r in rows if r[0] in PER_PROJECT_TABLES]
    assert per_project
    for table, name, definition in per_project:
        if "USING gin" in definition:  # GIN on an array: sharded with its table, no prefix
            continue
        assert "(project_id," in definition, (table, name, definition)


def test_migrations_run_backward_and_forward(transactional_db, settings):
    executor = MigrationExecutor(connection)
    targets = [("contexts", None), ("agent_sessions", None), ("conflicts", None),
               ("graph", None)]
    # Backward: everything that depends on the spec tables, then the tables themselves.
    executor.migrate(targets)
    tables, functions, _, _, _ = catalog(settings.MCP_SCHEMA)
    assert tables == set() and functions == set()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_namespace WHERE nspname = %s",
                       [settings.MCP_SCHEMA])
        assert cursor.fetchone()[0] == 0
    # Forward again, as `migrate` would.
    call_command("migrate", verbosity=0)
    tables, functions, _, _, _ = catalog(settings.MCP_SCHEMA)
    assert tables == SPEC_TABLES and functions == SPEC_FUNCTIONS
    with connection.cursor() as cursor:
        cursor.execute(f'SELECT project_id FROM "{settings.MCP_SCHEMA}".global_context')
        assert [r[0] for r in cursor.fetchall()] == [settings.MCP_PROJECT_ID]
