from django.apps import AppConfig


class ClaimsConfig(AppConfig):
    """Live file claims: which session is editing which file of a project now, asked before
    every edit, so that agents learn of each other before they collide. Above sessions
    (liveness) and conflicts (a contested file is a file_conflict at once)."""

    name = "claims"
    verbose_name = "File claims"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from claims import receivers  # noqa: F401  (connects the signal receivers)
        from claims.services import retention
        from foundation.core.retention import register_pruner

        # Retention asks each app to prune its own rows (claims that warn no one any more).
        register_pruner("claims", retention.prune)
