"""The spec's active_sessions table in MCP_SCHEMA."""

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

SCHEMA = settings.MCP_SCHEMA


def spec_table(name):
    """``db_table`` of a table in SCHEMA: Django quotes it as "schema"."name"."""
    return f'{SCHEMA}"."{name}'


# Frozen: the SQL this migration ran, not today's code.
CREATE_ACTIVE_SESSIONS = f"""
CREATE TABLE "{SCHEMA}".active_sessions (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  session_id VARCHAR(255) UNIQUE NOT NULL,
  task_id VARCHAR(255),
  status VARCHAR(50) DEFAULT 'active',
  started_at TIMESTAMPTZ DEFAULT NOW(),
  last_heartbeat TIMESTAMPTZ DEFAULT NOW(),
  ended_at TIMESTAMPTZ,
  context_snapshot JSONB,
  recovery_needed BOOLEAN DEFAULT FALSE,
  recovery_type VARCHAR(50),
  conversation_summary TEXT,
  unsaved_changes JSONB,
  project_dir VARCHAR(1000),
  git_branch VARCHAR(255)
);
CREATE INDEX idx_sessions_status ON "{SCHEMA}".active_sessions(status);
CREATE INDEX idx_sessions_heartbeat ON "{SCHEMA}".active_sessions(last_heartbeat DESC);
CREATE INDEX idx_sessions_recovery ON "{SCHEMA}".active_sessions(recovery_needed)
  WHERE recovery_needed = TRUE;
CREATE INDEX idx_sessions_task ON "{SCHEMA}".active_sessions(task_id);
"""


STATE = [
    migrations.CreateModel(
        name='ActiveSession',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('session_id', models.CharField(max_length=255, unique=True)),
            ('task_id', models.CharField(blank=True, max_length=255, null=True)),
            ('status', models.CharField(db_default='active', max_length=50, null=True)),
            ('started_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('last_heartbeat', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('ended_at', models.DateTimeField(blank=True, null=True)),
            ('context_snapshot', models.JSONField(blank=True, null=True)),
            ('recovery_needed', models.BooleanField(db_default=False, null=True)),
            ('recovery_type', models.CharField(blank=True, max_length=50, null=True)),
            ('conversation_summary', models.TextField(blank=True, null=True)),
            ('unsaved_changes', models.JSONField(blank=True, null=True)),
            ('project_dir', models.CharField(blank=True, max_length=1000, null=True)),
            ('git_branch', models.CharField(blank=True, max_length=255, null=True)),
        ],
        options={
            'db_table': spec_table('active_sessions'),
            'ordering': ['-started_at'],
        },
    ),
]


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('contexts', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                CREATE_ACTIVE_SESSIONS,
                f'DROP TABLE IF EXISTS "{SCHEMA}".active_sessions;')],
            state_operations=STATE,
        ),
    ]
