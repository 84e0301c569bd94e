"""SessionWork now belongs to the sessions app (sessions/0006): the table stays as it is."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('graph', '0003_graph_outbox'),
        ('agent_sessions', '0006_session_work'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='SessionWork')],
            database_operations=[],
        ),
    ]
