from django.apps import AppConfig


class ConflictsConfig(AppConfig):
    name = "conflicts"
    verbose_name = "Conflicts"
    default_auto_field = "django.db.models.BigAutoField"
