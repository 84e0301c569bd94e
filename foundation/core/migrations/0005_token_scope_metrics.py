from django.db import migrations, models


class Migration(migrations.Migration):
    """The metrics scope: a token that reads /metrics only (a Prometheus scraper)."""

    dependencies = [
        ("orchestrator", "0004_projects"),
    ]

    operations = [
        migrations.AlterField(
            model_name="apitoken",
            name="scope",
            field=models.CharField(
                choices=[("read", "Read"), ("write", "Write"), ("admin", "Admin"),
                         ("metrics", "Metrics")],
                default="write", max_length=10),
        ),
    ]
