"""SessionWork ("which session worked on which task") moves here from the graph app: it
is a sessions fact the graph mirrors. The table keeps its name (graph_session_work), its
rows and the outbox trigger graph/0003 put on it."""

import django.db.models.functions.datetime
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0005_hook_activity_and_shared_handoffs'),
        ('graph', '0003_graph_outbox'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='SessionWork',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True,
                                                   serialize=False, verbose_name='ID')),
                        ('session_id', models.CharField(max_length=255)),
                        ('task_id', models.CharField(max_length=255)),
                        ('agent_id', models.CharField(blank=True, max_length=255, null=True)),
                        ('started_at', models.DateTimeField(
                            db_default=django.db.models.functions.datetime.Now())),
                    ],
                    options={
                        'db_table': 'graph_session_work',
                        'indexes': [models.Index(fields=['task_id', '-started_at'],
                                                 name='graph_session_work_task_idx')],
                        'constraints': [models.UniqueConstraint(
                            fields=('session_id', 'task_id'),
                            name='graph_session_work_session_task_key')],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
