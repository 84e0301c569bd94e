"""Live file claims: who is editing which file of a project now (claims.services)."""

import django.contrib.postgres.fields
import django.db.models.functions.datetime
from django.db import migrations, models

import foundation.core.projects


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.CreateModel(
            name='FileClaim',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('project_id', models.CharField(default=foundation.core.projects.default_project, max_length=255)),
                ('path', models.CharField(max_length=1000)),
                ('session_id', models.CharField(max_length=255)),
                ('task_id', models.CharField(blank=True, max_length=255, null=True)),
                ('source', models.CharField(max_length=20)),
                ('claimed_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('touched_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('expires_at', models.DateTimeField()),
                ('released_at', models.DateTimeField(blank=True, null=True)),
                ('known_sessions', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=255), default=list, size=None)),
                ('overlaps_pending', django.contrib.postgres.fields.ArrayField(base_field=models.CharField(max_length=255), default=list, size=None)),
            ],
            options={
                'db_table': 'file_claims',
                'ordering': ['path', '-touched_at'],
                'indexes': [models.Index(fields=['project_id', 'path'], name='file_claim_project_path'), models.Index(fields=['project_id', 'task_id'], name='file_claim_project_task')],
                'constraints': [models.UniqueConstraint(fields=('session_id', 'path'), name='file_claim_session_path_key')],
            },
        ),
    ]
