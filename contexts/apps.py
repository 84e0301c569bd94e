from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Task contexts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from contexts import signals
        from contexts.services import events

        # Every process that saves broadcasts its task changes (contexts/services/events.py).
        signals.task_changed.connect(events.on_task_changed, dispatch_uid="contexts.events")
