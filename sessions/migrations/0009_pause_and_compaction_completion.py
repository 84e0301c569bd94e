"""Pause and resume (paused_at, reason, remaining, resets_at, resume count) and completed compactions, on the session detail rows; defaults in the database, so the raw inserts of the session services need no change."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0008_session_notices'),
    ]

    operations = [
        migrations.AddField(
            model_name='sessiondetail',
            name='compactions_completed',
            field=models.IntegerField(db_default=0),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='pause_reason',
            field=models.CharField(blank=True, max_length=20, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='pause_remaining_percent',
            field=models.FloatField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='pause_resets_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='paused_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='sessiondetail',
            name='resume_count',
            field=models.IntegerField(db_default=0),
        ),
        migrations.AddIndex(
            model_name='sessiondetail',
            index=models.Index(condition=models.Q(('paused_at__isnull', False)), fields=['pause_resets_at'], name='session_detail_paused'),
        ),
    ]
