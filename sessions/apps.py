from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions already owns the label "sessions".
    label = "agent_sessions"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"
