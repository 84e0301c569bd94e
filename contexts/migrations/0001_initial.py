
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from orchestrator.core import spec_sql
from orchestrator.core.db import spec_table

SCHEMA = settings.MCP_SCHEMA


STATE = [
    migrations.CreateModel(
        name='Checkpoint',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('checkpoint_id', models.CharField(max_length=255, unique=True)),
            ('label', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('checkpoint_type', models.CharField(db_default='manual', max_length=50, null=True)),
            ('task_id', models.CharField(blank=True, max_length=255, null=True)),
            ('scope', models.CharField(max_length=50)),
            ('included_tasks', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('snapshot', models.JSONField()),
            ('es_memory_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('session_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': spec_table('checkpoints'),
            'ordering': ['-created_at'],
        },
    ),
    migrations.CreateModel(
        name='GlobalContext',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('project_id', models.CharField(max_length=255, unique=True)),
            ('project_name', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('hard_rules', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('tech_stack', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('key_paths', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('services', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('active_task_id', models.CharField(blank=True, max_length=255, null=True)),
            ('orchestrator_context', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('updated_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('version', models.IntegerField(db_default=1, null=True)),
        ],
        options={
            'verbose_name_plural': 'global context',
            'db_table': spec_table('global_context'),
        },
    ),
    migrations.CreateModel(
        name='TaskContext',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('task_id', models.CharField(max_length=255, unique=True)),
            ('name', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('agent_type', models.CharField(blank=True, max_length=100, null=True)),
            ('status', models.CharField(db_default='pending', max_length=50, null=True)),
            ('priority', models.IntegerField(db_default=50, null=True)),
            ('current_phase', models.CharField(blank=True, max_length=255, null=True)),
            ('iteration', models.IntegerField(db_default=0, null=True)),
            ('score', models.DecimalField(blank=True, decimal_places=2, max_digits=5, null=True)),
            ('locked_elements', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('immediate_context', models.JSONField(blank=True, null=True)),
            ('key_files', models.JSONField(blank=True, null=True)),
            ('technical_decisions', models.JSONField(blank=True, null=True)),
            ('resume_prompt', models.TextField(blank=True, null=True)),
            ('keywords', models.JSONField(blank=True, null=True)),
            ('token_estimate', models.IntegerField(blank=True, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('updated_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('last_session_at', models.DateTimeField(blank=True, null=True)),
            ('version', models.IntegerField(db_default=1, null=True)),
        ],
        options={
            'db_table': spec_table('task_contexts'),
            'ordering': ['-priority', 'task_id'],
        },
    ),
    migrations.CreateModel(
        name='ContextVersion',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('task_id', models.CharField(max_length=255)),
            ('version', models.IntegerField()),
            ('snapshot', models.JSONField()),
            ('change_summary', models.TextField(blank=True, null=True)),
            ('change_type', models.CharField(blank=True, max_length=50, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('session_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': spec_table('context_versions'),
            'ordering': ['task_id', '-version'],
            'constraints': [models.UniqueConstraint(fields=('task_id', 'version'), name='context_versions_task_id_version_key')],
        },
    ),
]


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.RunSQL(spec_sql.create_schema_and_functions(SCHEMA), spec_sql.drop_schema_and_functions(SCHEMA)),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(
                spec_sql.create_context_tables(SCHEMA, settings.MCP_PROJECT_ID),
                spec_sql.drop_context_tables(SCHEMA))],
            state_operations=STATE,
        ),
    ]
