"""Projects are first-class: the projects table, and tokens limited to some of them.

The rows of existing installations are given their project by contexts/0004 (one per
global_context row, the default project among them)."""

import django.contrib.postgres.fields
import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('orchestrator', '0003_job_runs'),
    ]

    operations = [
        migrations.CreateModel(
            name='Project',
            fields=[
                ('id', models.CharField(max_length=200, primary_key=True, serialize=False)),
                ('name', models.CharField(max_length=500)),
                ('created_at', models.DateTimeField(
                    db_default=django.db.models.functions.datetime.Now())),
            ],
            options={
                'db_table': 'projects',
                'ordering': ['id'],
            },
        ),
        migrations.AddField(
            model_name='apitoken',
            name='projects',
            field=django.contrib.postgres.fields.ArrayField(
                base_field=models.CharField(max_length=200), blank=True, default=list,
                size=None),
        ),
    ]
