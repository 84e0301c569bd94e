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
        from contexts.services import retention
        from foundation.core.retention import register_pruner

        # Retention asks each app to prune its own rows (checkpoints, versions, task files).
        register_pruner("contexts", retention.prune)
        from contexts import signals
        from contexts.services import events
        from contexts.services.tasks import refuse_unknown_task_lock
        from locks.signals import lock_asked_for

        # Locks sits below contexts and knows no tasks: a client's lock on a task that
        # does not exist is refused here (E1610), before the lock rule is asked.
        lock_asked_for.connect(refuse_unknown_task_lock,
                               dispatch_uid="contexts.refuse_unknown_task_lock")
        # Every process that saves broadcasts its task changes (contexts/services/events.py).
        signals.task_changed.connect(events.on_task_changed, dispatch_uid="contexts.events")
