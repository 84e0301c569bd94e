"""Notices for a session's agent, taken by its next hook answer (sessions.services.notices); an index for the edits the file policy refused lately."""

import django.db.models.functions.datetime
from django.db import migrations, models

import foundation.core.projects


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0007_project_scope'),
    ]

    operations = [
        migrations.CreateModel(
            name='SessionNotice',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('session_id', models.CharField(max_length=255)),
                ('project_id', models.CharField(default=foundation.core.projects.default_project, max_length=255)),
                ('kind', models.CharField(max_length=50)),
                ('text', models.TextField()),
                ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now())),
                ('delivered_at', models.DateTimeField(blank=True, null=True)),
            ],
            options={
                'ordering': ['id'],
            },
        ),
        migrations.AddIndex(
            model_name='sessionevent',
            index=models.Index(condition=models.Q(('content', 'edit_blocked')), fields=['created_at'], name='session_event_edit_blocked'),
        ),
        migrations.AddIndex(
            model_name='sessionnotice',
            index=models.Index(condition=models.Q(('delivered_at__isnull', True)), fields=['session_id'], name='session_notice_pending'),
        ),
    ]
