"""What kind of agent runs a session and for what: agent kind, workflow, skill and a small
metadata object on the session's detail row (start_session), with partial indexes for
get_active_session's lookups by agent kind or workflow. All nullable: the raw inserts of
the session services, and other programs' sessions, need no change."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0011_stored_times_in_range'),
    ]

    operations = [
        migrations.AddField(
            model_name='sessiondetail',
            name='agent_kind',
            field=models.CharField(blank=True, max_length=64, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='workflow',
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='skill',
            field=models.CharField(blank=True, max_length=200, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='metadata',
            field=models.JSONField(blank=True, null=True),
        ),
        migrations.AddIndex(
            model_name='sessiondetail',
            index=models.Index(condition=models.Q(('agent_kind__isnull', False)), fields=['agent_kind'], name='session_detail_agent_kind'),
        ),
        migrations.AddIndex(
            model_name='sessiondetail',
            index=models.Index(condition=models.Q(('workflow__isnull', False)), fields=['workflow'], name='session_detail_workflow'),
        ),
    ]
