from django.apps import AppConfig


class ConflictsConfig(AppConfig):
    name = "conflicts"
    verbose_name = "Conflicts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from foundation.core.jobruns import register_job

        register_job("conflict detection", "conflicts.detect_conflicts",
                     metric="detect_conflicts", heavy=True)
