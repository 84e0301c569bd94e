"""Session events are append-only, an audit log: the database refuses UPDATE and DELETE.

Reuses the spec schema's guard function ``<MCP_SCHEMA>_internal.forbid_mutation()``
(contexts/0001), which lets a DELETE through only when the transaction sets
``orchestrator.allow_version_pruning = 'on'`` (the stale-session cleanup does that).
"""

from django.conf import settings
from django.db import migrations

TABLE = "agent_sessions_sessionevent"
GUARD = f'"{settings.MCP_SCHEMA}_internal".forbid_mutation()'


class Migration(migrations.Migration):

    dependencies = [
        ("agent_sessions", "0002_session_tables"),
        ("contexts", "0001_initial"),
    ]

    operations = [
        migrations.RunSQL(
            f"CREATE TRIGGER session_events_immutable BEFORE UPDATE OR DELETE ON {TABLE} "
            f"FOR EACH ROW EXECUTE FUNCTION {GUARD};",
            f"DROP TRIGGER IF EXISTS session_events_immutable ON {TABLE};",
        ),
    ]
