"""An installation from before projects migrates without loss: every row joins the
default project (issue 19)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from foundation.core.db import qualified

BEFORE_PROJECTS = [("orchestrator", "0003_job_runs"),
                   ("contexts", "0003_global_context_versions"),
                   ("agent_sessions", "0006_session_work"),
                   ("conflicts", "0003_task_lock_hint_moved_to_locks"),
                   ("graph", "0004_session_work_moved_to_sessions"),
                   ("locks", "0001_task_lock_hint")]
PER_PROJECT = ("task_contexts", "context_versions", "checkpoints", "active_sessions",
               "context_conflicts", "task_relationships")


def run(sql: str, params=None):
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall() if cursor.description else None


def populate_the_old_schema() -> dict[str, int]:
    tasks, sessions = qualified("task_contexts"), qualified("active_sessions")
    run(f"INSERT INTO {tasks} (task_id, name, key_files, status) VALUES "
        "('old-a', 'A', '[\"src/app.py\"]', 'in_progress'), "
        "('old-b', 'B', '[\"src/app.py\"]', 'in_progress')")
    run(f"UPDATE {tasks} SET current_phase = 'build' WHERE task_id = 'old-a'")  # a version
    run(f"INSERT INTO {qualified('checkpoints')} (checkpoint_id, label, task_id, scope, "
        "snapshot) VALUES ('cp-old', 'before', 'old-a', 'task', '{}')")
    run(f"INSERT INTO {sessions} (session_id, task_id, project_dir) VALUES "
        "('s-old-1', 'old-a', '/srv/app'), ('s-old-2', 'old-b', '/srv/app-worktree')")
    run(f"INSERT INTO {qualified('context_conflicts')} (task_a_id, task_b_id, conflict_type, "
        "description, severity) VALUES ('old-a', 'old-b', 'file_conflict', 'both', 'medium')")
    run(f"INSERT INTO {qualified('task_relationships')} (source_task_id, target_task_id, "
        "relationship_type) VALUES ('old-a', 'old-b', 'blocks')")
    run(f"UPDATE {qualified('global_context')} SET active_task_id = 'old-a', "
        "hard_rules = '[\"keep it\"]'")
    # Handoffs were kept per directory: two active notes, one per directory.
    run("INSERT INTO agent_sessions_sessionhandoff (project_key, from_session_id, summary, "
        "open_items, active, created_at) VALUES "
        "('/srv/app', 's-old-1', 'older note', '[]', TRUE, now() - interval '1 hour'), "
        "('/srv/app-worktree', 's-old-2', 'newer note', '[]', TRUE, now())")
    run("INSERT INTO graph_session_work (session_id, task_id, started_at) "
        "VALUES ('s-old-1', 'old-a', now())")
    run("INSERT INTO conflicts_task_lock_hint (task_id, held_until) "
        "VALUES ('old-a', now() + interval '1 minute')")
    return {table: run(f"SELECT count(*) FROM {qualified(table)}")[0][0]
            for table in PER_PROJECT}


@pytest.mark.django_db(transaction=True)
def test_a_populated_database_moves_into_the_default_project(settings):
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE_PROJECTS)
    counts = populate_the_old_schema()
    assert counts["context_versions"] == 3  # two creations and an update

    call_command("migrate", verbosity=0)

    default = settings.MCP_PROJECT_ID
    for table, count in counts.items():
        assert run(f"SELECT project_id, count(*) FROM {qualified(table)} GROUP BY 1") \
            == [(default, count)], table
    assert run("SELECT id, name FROM projects") == [(default, "Story Portal App")]
    assert run(f"SELECT project_id, active_task_id, hard_rules::text FROM "
               f"{qualified('global_context')}") == [(default, "old-a", '["keep it"]')]
    # One active handoff per project now: the newest; the directory each came from is kept.
    assert run("SELECT summary, active, project_id, project_dir FROM "
               "agent_sessions_sessionhandoff ORDER BY created_at") == [
        ("older note", False, default, "/srv/app"),
        ("newer note", True, default, "/srv/app-worktree")]
    # ... and the two tables renamed for their apps since keep those rows.
    assert run("SELECT project_id FROM agent_sessions_sessionwork") == [(default,)]
    assert run("SELECT project_id FROM locks_task_lock_hint") == [(default,)]
    # The versioning trigger writes the task's project from now on.
    run(f"UPDATE {qualified('task_contexts')} SET current_phase = 'ship' "
        "WHERE task_id = 'old-b'")
    assert run(f"SELECT project_id FROM {qualified('context_versions')} "
               "WHERE task_id = 'old-b' ORDER BY version DESC LIMIT 1") == [(default,)]
