"""The spec's task_relationships table in MCP_SCHEMA."""

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

SCHEMA = settings.MCP_SCHEMA


def spec_table(name):
    """``db_table`` of a table in SCHEMA: Django quotes it as "schema"."name"."""
    return f'{SCHEMA}"."{name}'


# Frozen: the SQL this migration ran, not today's code.
CREATE_TASK_RELATIONSHIPS = f"""
CREATE TABLE "{SCHEMA}".task_relationships (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  source_task_id VARCHAR(255) NOT NULL,
  target_task_id VARCHAR(255) NOT NULL,
  relationship_type VARCHAR(50) NOT NULL,
  metadata JSONB DEFAULT '{{}}',
  strength DECIMAL(3,2),
  created_by VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW(),
  UNIQUE(source_task_id, target_task_id, relationship_type)
);
CREATE INDEX idx_relationships_source ON "{SCHEMA}".task_relationships(source_task_id);
CREATE INDEX idx_relationships_target ON "{SCHEMA}".task_relationships(target_task_id);
CREATE INDEX idx_relationships_type ON "{SCHEMA}".task_relationships(relationship_type);
"""


STATE = [
    migrations.CreateModel(
        name='TaskRelationship',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('source_task_id', models.CharField(max_length=255)),
            ('target_task_id', models.CharField(max_length=255)),
            ('relationship_type', models.CharField(max_length=50)),
            ('metadata', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('strength', models.DecimalField(blank=True, decimal_places=2, max_digits=3, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': spec_table('task_relationships'),
            'constraints': [models.UniqueConstraint(fields=('source_task_id', 'target_task_id', 'relationship_type'), name='task_relationships_source_task_id_target_task_id_relations_key')],
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
                CREATE_TASK_RELATIONSHIPS,
                f'DROP TABLE IF EXISTS "{SCHEMA}".task_relationships;')],
            state_operations=STATE,
        ),
    ]
