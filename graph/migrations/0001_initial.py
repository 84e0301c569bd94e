
import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

from orchestrator.core import spec_sql
from orchestrator.core.db import spec_table

SCHEMA = settings.MCP_SCHEMA


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
                spec_sql.create_relationships_table(SCHEMA),
                f'DROP TABLE IF EXISTS "{SCHEMA}".task_relationships;')],
            state_operations=STATE,
        ),
    ]
