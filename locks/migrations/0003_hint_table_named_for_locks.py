"""The lock hint's table is named for the app that owns it: conflicts_task_lock_hint
becomes locks_task_lock_hint (a rename: rows, index and the save path's reads keep)."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('locks', '0002_project_scope'),
    ]

    operations = [
        migrations.AlterModelTable(name='tasklockhint', table='locks_task_lock_hint'),
    ]
