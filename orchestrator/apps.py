from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class OrchestratorConfig(AppConfig):
    name = "orchestrator"
    verbose_name = "Orchestrator"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every app declares its tools in tools.py; importing them fills the registry.
        autodiscover_modules("tools")

        from orchestrator.metrics import register_stored_state_collector

        register_stored_state_collector()

        from orchestrator import tracing

        tracing.configure()
