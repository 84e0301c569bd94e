"""Project learnings: what end_session's ``learnings`` leave for the project's next
sessions, in the internal schema beside the shared tables; the context
bundle's WARM tier reads the newest by (project_id, id)."""

from django.conf import settings
from django.db import migrations, models
from django.db.models.functions import Now

I = f"{settings.MCP_SCHEMA}_internal"  # noqa: E741 - the internal schema, as 0001 names it


class Migration(migrations.Migration):

    dependencies = [("contexts", "0008_checkpoint_details")]

    operations = [
        migrations.CreateModel(
            name="ProjectLearning",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True,
                                           serialize=False, verbose_name="ID")),
                ("project_id", models.CharField(max_length=255)),
                ("text", models.TextField()),
                ("session_id", models.CharField(blank=True, max_length=255, null=True)),
                ("agent_id", models.CharField(blank=True, max_length=255, null=True)),
                ("created_at", models.DateTimeField(db_default=Now())),
            ],
            options={"db_table": f'{I}"."project_learnings',
                     "indexes": [models.Index(fields=["project_id", "-id"],
                                              name="project_learning_recent")]},
        ),
    ]
