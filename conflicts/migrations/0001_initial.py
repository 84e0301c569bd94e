
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from orchestrator.core import spec_sql
from orchestrator.core.db import spec_table

SCHEMA = settings.MCP_SCHEMA


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
                spec_sql.create_conflicts_table(SCHEMA),
                f'DROP TABLE IF EXISTS "{SCHEMA}".context_conflicts;')],
            state_operations=STATE,
        ),
    ]
