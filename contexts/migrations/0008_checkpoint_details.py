"""Checkpoint details: tags, agent and status (active,
archived, corrupt) of a checkpoint, in the internal schema beside the spec's table. No
foreign key: it would stop other programs (and the tests) from truncating the spec's
table; the checkpoint check removes the rows of checkpoints that are gone."""

from django.conf import settings
from django.db import migrations, models

I = f"{settings.MCP_SCHEMA}_internal"  # noqa: E741 - the internal schema, as 0001 names it

CORRUPT_INDEX = f"""
CREATE INDEX checkpoint_details_corrupt ON "{I}".checkpoint_details (project_id)
  WHERE status = 'corrupt';
"""
DROP_CORRUPT_INDEX = f'DROP INDEX IF EXISTS "{I}".checkpoint_details_corrupt;'


class Migration(migrations.Migration):

    dependencies = [("contexts", "0007_plain_checkpoint_snapshots")]

    operations = [
        migrations.CreateModel(
            name="CheckpointDetails",
            fields=[
                ("checkpoint_id", models.CharField(max_length=255, primary_key=True,
                                                   serialize=False)),
                ("project_id", models.CharField(max_length=255)),
                ("tags", models.JSONField(default=list)),
                ("agent_id", models.CharField(blank=True, max_length=255, null=True)),
                ("status", models.CharField(choices=[("active", "active"),
                                                     ("archived", "archived"),
                                                     ("corrupt", "corrupt")],
                                            default="active", max_length=20)),
                ("status_reason", models.TextField(blank=True, null=True)),
                ("checked_at", models.DateTimeField(blank=True, null=True)),
            ],
            options={"db_table": f'{I}"."checkpoint_details',
                     "verbose_name_plural": "checkpoint details"},
        ),
        migrations.RunSQL(CORRUPT_INDEX, DROP_CORRUPT_INDEX),
    ]
