from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "graph"
    verbose_name = "Task graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from graph import receivers

        receivers.connect()
