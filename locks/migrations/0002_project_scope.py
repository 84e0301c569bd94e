"""A lock hint is kept per project, as its task is."""

from django.db import migrations, models

from foundation.core.projects import default_project


class Migration(migrations.Migration):

    dependencies = [
        ('locks', '0001_task_lock_hint'),
    ]

    operations = [
        migrations.AddField(model_name='tasklockhint', name='project_id',
                            field=models.CharField(default=default_project, max_length=255)),
        migrations.AddIndex(model_name='tasklockhint',
                            index=models.Index(fields=['project_id', 'held_until'],
                                               name='lock_hint_project_until')),
    ]
