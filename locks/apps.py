from django.apps import AppConfig


class LocksConfig(AppConfig):
    """Task locks and the lock rule every task write obeys. Below contexts: the
    write path needs the rule, and nothing here needs to know what a task holds."""

    name = "locks"
    verbose_name = "Task locks"
    default_auto_field = "django.db.models.BigAutoField"
