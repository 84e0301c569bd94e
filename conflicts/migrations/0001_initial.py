"""The spec's context_conflicts table in MCP_SCHEMA."""

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

SCHEMA = settings.MCP_SCHEMA


def spec_table(name):
    """``db_table`` of a table in SCHEMA: Django quotes it as "schema"."name"."""
    return f'{SCHEMA}"."{name}'


# Frozen: the SQL this migration ran, not today's code.
CREATE_CONTEXT_CONFLICTS = f"""
CREATE TABLE "{SCHEMA}".context_conflicts (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_a_id VARCHAR(255) NOT NULL,
  task_b_id VARCHAR(255),
  conflict_type VARCHAR(50) NOT NULL,
  description TEXT NOT NULL,
  severity VARCHAR(20) NOT NULL,
  strength DECIMAL(3,2),
  evidence JSONB,
  resolution_status VARCHAR(50) DEFAULT 'unresolved',
  resolution JSONB,
  resolved_by VARCHAR(255),
  detected_at TIMESTAMPTZ DEFAULT NOW(),
  resolved_at TIMESTAMPTZ,
  detected_by VARCHAR(100),
  detection_method VARCHAR(255)
);
CREATE INDEX idx_conflicts_task_a ON "{SCHEMA}".context_conflicts(task_a_id);
CREATE INDEX idx_conflicts_task_b ON "{SCHEMA}".context_conflicts(task_b_id);
CREATE INDEX idx_conflicts_status ON "{SCHEMA}".context_conflicts(resolution_status);
CREATE INDEX idx_conflicts_severity ON "{SCHEMA}".context_conflicts(severity);
CREATE INDEX idx_conflicts_unresolved ON "{SCHEMA}".context_conflicts(resolution_status)
  WHERE resolution_status = 'unresolved';
"""


STATE = [
    migrations.CreateModel(
        name='ContextConflict',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('task_a_id', models.CharField(max_length=255)),
            ('task_b_id', models.CharField(blank=True, max_length=255, null=True)),
            ('conflict_type', models.CharField(max_length=50)),
            ('description', models.TextField()),
            ('severity', models.CharField(max_length=20)),
            ('strength', models.DecimalField(blank=True, decimal_places=2, max_digits=3, null=True)),
            ('evidence', models.JSONField(blank=True, null=True)),
            ('resolution_status', models.CharField(db_default='unresolved', max_length=50, null=True)),
            ('resolution', models.JSONField(blank=True, null=True)),
            ('resolved_by', models.CharField(blank=True, max_length=255, null=True)),
            ('detected_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('resolved_at', models.DateTimeField(blank=True, null=True)),
            ('detected_by', models.CharField(blank=True, max_length=100, null=True)),
            ('detection_method', models.CharField(blank=True, max_length=255, null=True)),
        ],
        options={
            'db_table': spec_table('context_conflicts'),
            'ordering': ['-detected_at'],
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
                CREATE_CONTEXT_CONFLICTS,
                f'DROP TABLE IF EXISTS "{SCHEMA}".context_conflicts;')],
            state_operations=STATE,
        ),
    ]
