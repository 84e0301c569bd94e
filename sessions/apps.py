from django.apps import AppConfig


class AgentSessionsConfig(AppConfig):
    name = "sessions"
    # django.contrib.sessions already owns the label "sessions".
    label = "agent_sessions"
    verbose_name = "Agent sessions"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from foundation.core.jobruns import register_job

        # The periodic jobs of sessions/tasks.py, as the console lists them.
        register_job("crash sweep", "sessions.detect_crashed_sessions",
                     metric="detect_crashed_sessions")
        register_job("stale-session cleanup", "sessions.clean_stale_sessions",
                     metric="clean_stale_sessions")
        register_job("pause auto-resume", "sessions.resume_paused_sessions",
                     metric="resume_paused_sessions")
        from foundation.core.retention import register_pruner
        from sessions.services import retention

        # Retention asks each app to prune its own rows (events, sessions long over, handoff
        # notes, notices; the owner rows of removed sessions through the foundation).
        register_pruner("sessions", retention.prune)

        from foundation.core.tools.registry import add_after_call_hook
        from sessions.services.history import record_tool_call

        add_after_call_hook(record_tool_call)

        from contexts.signals import agent_of_session, task_switched
        from sessions.services.work import agent_of, record_switch

        task_switched.connect(record_switch, dispatch_uid="sessions.record_switch")

        from locks.signals import lock_requested
        from sessions.services.pause import refuse_paused_lock

        lock_requested.connect(refuse_paused_lock, dispatch_uid="sessions.refuse_paused_lock")
        agent_of_session.connect(agent_of, dispatch_uid="sessions.agent_of")
