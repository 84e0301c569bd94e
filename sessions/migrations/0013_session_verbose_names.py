"""The console calls ActiveSession "Session" / "Sessions" (issue 38): every row is a session
of any state. Names only; the table keeps the spec's name."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0012_session_agent_kind_workflow_metadata'),
    ]

    operations = [
        migrations.AlterModelOptions(
            name='activesession',
            options={'ordering': ['-started_at'], 'verbose_name': 'session', 'verbose_name_plural': 'sessions'},
        ),
    ]
