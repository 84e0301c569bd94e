"""TaskLockHint moves here from the conflicts app; its table keeps its name and rows."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('conflicts', '0002_task_lock_hint'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='TaskLockHint',
                    fields=[
                        ('task_id', models.CharField(max_length=255, primary_key=True,
                                                     serialize=False)),
                        ('held_until', models.DateTimeField()),
                    ],
                    options={
                        'db_table': 'conflicts_task_lock_hint',
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
