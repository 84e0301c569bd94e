from django.apps import AppConfig


class GraphConfig(AppConfig):
    name = "graph"
    verbose_name = "Task graph"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from foundation.core.jobruns import register_job

        register_job("graph sync", "graph.sync_graph", metric="sync_graph", heavy=True)
        from graph import receivers

        receivers.connect()
        from contexts.services.relationships import register_blocker_reader
        from graph.readers.postgres import unfinished_blocker_rows

        # Contexts (below graph) asks a switch's blockers of graph's table through graph.
        register_blocker_reader(unfinished_blocker_rows)
