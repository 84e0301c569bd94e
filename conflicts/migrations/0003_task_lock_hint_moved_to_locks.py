"""TaskLockHint now belongs to the locks app (locks/0001): the table stays as it is."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('conflicts', '0002_task_lock_hint'),
        ('locks', '0001_task_lock_hint'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='TaskLockHint')],
            database_operations=[],
        ),
    ]
