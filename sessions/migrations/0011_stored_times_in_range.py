"""Times a client gave that no layer can read back are brought into range.

Before issue 34 a pause's ``resetsAt`` and a hook tool use's ``timestamp`` were stored as
given: Postgres keeps years down to 4713 BC and past 9999, Python (psycopg reading the row)
stops at year 1 and year 9999, so one row before year 1 made every check_recovery that
listed overdue pauses fail with "timestamp too small". Input is now bounded
(``foundation.core.tools.input_checks.check_date_time``: 1970 to the end of 9998); rows
stored before are mended here the same way. A pause keeps its pause but loses the reset
time (unknown, as when a client sends none: it is never listed as overdue, and ends as any
pause does); a tool use's time is clamped into the range, the row kept."""

from django.db import migrations

EARLIEST = "1970-01-01 00:00:00+00"
END = "9999-01-01 00:00:00+00"  # exclusive


def mend(apps, schema_editor):
    detail = apps.get_model("agent_sessions", "SessionDetail")._meta.db_table
    history = apps.get_model("agent_sessions", "ToolInvocation")._meta.db_table
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {detail} SET pause_resets_at = NULL WHERE pause_resets_at < %s "
            "OR pause_resets_at >= %s", [EARLIEST, END])
        cursor.execute(
            f"UPDATE {history} SET timestamp = CASE WHEN timestamp < %s THEN %s::timestamptz "
            "ELSE %s::timestamptz - interval '1 second' END "
            "WHERE timestamp < %s OR timestamp >= %s", [EARLIEST, EARLIEST, END, EARLIEST, END])


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0010_tool_history_project'),
    ]

    operations = [
        migrations.RunPython(mend, migrations.RunPython.noop),
    ]
