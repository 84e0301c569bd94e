from django.apps import AppConfig


class ContextsConfig(AppConfig):
    name = "contexts"
    verbose_name = "Task contexts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from foundation.core.jobruns import register_job

        # The periodic jobs of contexts/tasks.py, as the console lists them.
        register_job("hot sync", "contexts.sync_hot_context", metric="sync_hot_context",
                     heavy=True)
        register_job("checkpoint check", "contexts.check_checkpoints")
        register_job("pending-save replay", "contexts.replay_pending_saves",
                     metric="replay_pending_saves")
