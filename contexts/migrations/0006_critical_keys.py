"""The critical context keys of a task, in the internal schema beside
the spec's tables (MCP_SCHEMA holds exactly the spec's seven)."""

from django.conf import settings
from django.db import migrations, models

I = f"{settings.MCP_SCHEMA}_internal"  # noqa: E741 - the internal schema, as 0001 names it


class Migration(migrations.Migration):

    dependencies = [
        ('contexts', '0005_storage_quota'),
    ]

    operations = [
        migrations.CreateModel(
            name='CriticalKeys',
            fields=[
                ('task_id', models.CharField(max_length=255, primary_key=True,
                                             serialize=False)),
                ('project_id', models.CharField(max_length=255)),
                ('keys', models.JSONField(default=list)),
                ('updated_by', models.CharField(blank=True, max_length=255, null=True)),
                ('updated_at', models.DateTimeField(auto_now=True)),
            ],
            options={'db_table': f'{I}"."task_critical_keys'},
        ),
    ]
