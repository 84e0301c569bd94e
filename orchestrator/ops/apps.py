from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Running the service: the periodic jobs of the orchestrator itself (retention,
    backup) and the operator's commands (backup, restore, prune, claude_setup, mcp_stdio)."""

    name = "orchestrator.ops"
    label = "orchestrator_ops"
    verbose_name = "Operations"
