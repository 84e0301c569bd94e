from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Running the service: the periodic jobs of the orchestrator itself (retention,
    backup) and the operator's commands (backup, restore, prune, claude_setup, mcp_stdio)."""

    name = "orchestrator.ops"
    label = "orchestrator_ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from foundation.core.jobruns import register_job, register_schedule
        from orchestrator.celery import periodic_jobs

        # The console reads each job's period from beat's schedule, which lives here above.
        register_schedule(periodic_jobs)
        register_job("retention", "orchestrator.retention")
