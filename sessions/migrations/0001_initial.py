
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from orchestrator.core import spec_sql
from orchestrator.core.db import spec_table

SCHEMA = settings.MCP_SCHEMA


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
                spec_sql.create_sessions_table(SCHEMA),
                f'DROP TABLE IF EXISTS "{SCHEMA}".active_sessions;')],
            state_operations=STATE,
        ),
    ]
