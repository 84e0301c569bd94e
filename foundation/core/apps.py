from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class CoreConfig(AppConfig):
    """The framework every app builds on: tokens, session owners and job runs (its models,
    under the app label ``orchestrator`` their tables and migrations have always had), the
    tool registry, auth and access."""

    name = "foundation.core"
    label = "orchestrator"
    verbose_name = "Orchestrator"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # Every app declares its tools in tools.py; importing them fills the registry.
        autodiscover_modules("tools")
        # The core's own tool (the registry package is its ``tools``): enrollment codes.
        from foundation.core import enrollment  # noqa: F401
        from foundation.observability import tracing

        tracing.configure()
