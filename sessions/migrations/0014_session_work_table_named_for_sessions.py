"""The session work table is named for the app that owns it: graph_session_work becomes
agent_sessions_sessionwork, and its index and unique constraint lose the graph_ prefix.
Renames only: rows stay, and so do the graph outbox triggers, which Postgres keeps on the
table whatever its name (their function keeps its name, graph_outbox_graph_session_work)."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0013_session_verbose_names'),
    ]

    operations = [
        migrations.AlterModelTable(name='sessionwork', table='agent_sessions_sessionwork'),
        migrations.RenameIndex(model_name='sessionwork', new_name='session_work_task_idx',
                               old_name='graph_session_work_task_idx'),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveConstraint(model_name='sessionwork',
                                            name='graph_session_work_session_task_key'),
                migrations.AddConstraint(
                    model_name='sessionwork',
                    constraint=models.UniqueConstraint(fields=('session_id', 'task_id'),
                                                       name='session_work_session_task_key')),
            ],
            database_operations=[
                migrations.RunSQL(
                    'ALTER TABLE agent_sessions_sessionwork RENAME CONSTRAINT '
                    'graph_session_work_session_task_key TO session_work_session_task_key',
                    'ALTER TABLE agent_sessions_sessionwork RENAME CONSTRAINT '
                    'session_work_session_task_key TO graph_session_work_session_task_key'),
            ],
        ),
    ]
