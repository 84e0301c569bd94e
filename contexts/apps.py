from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Task contexts"
    default_auto_field = "django.db.models.BigAutoField"
