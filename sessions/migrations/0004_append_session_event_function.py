"""append_event in one round trip: a function that takes the session's row lock and the
next sequence, checks the session is still open, and inserts the event.

Why a function: done from Python it took four round trips (BEGIN, the counter UPDATE, the
INSERT, COMMIT) while holding the session's row lock, and every agent's every event pays
for them. Each statement inside a volatile plpgsql function gets a fresh snapshot, so
the status check still runs after the lock is held and sees an end_session that
committed while we waited (nothing is appended to an ended session's log).
"""

from django.conf import settings
from django.db import migrations

FUNCTION = f'"{settings.MCP_SCHEMA}_internal".append_session_event'
SIGNATURE = f"{FUNCTION}(varchar, varchar, varchar, text, jsonb, varchar[])"


def create_function(apps, schema_editor):
    quote = schema_editor.connection.ops.quote_name
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("SELECT current_schema()")
        schema = quote(cursor.fetchone()[0])
    detail = f"{schema}.{quote('agent_sessions_sessiondetail')}"
    events = f"{schema}.{quote('agent_sessions_sessionevent')}"
    sessions = f'"{settings.MCP_SCHEMA}".active_sessions'
    schema_editor.execute(f"""
CREATE OR REPLACE FUNCTION {FUNCTION}(
  p_session varchar, p_type varchar, p_role varchar, p_content text, p_parts jsonb,
  p_closed varchar[],
  OUT event_id bigint, OUT event_sequence integer, OUT created_at timestamptz,
  OUT session_status varchar)
AS $$
BEGIN
  UPDATE {detail} SET event_count = event_count + 1
   WHERE session_id = p_session RETURNING event_count INTO event_sequence;
  IF NOT FOUND THEN  -- a session started before detail rows existed
    INSERT INTO {detail} (session_id, compaction_count, event_count, scratchpad, created_at)
    SELECT p_session, 0, 0, '{{}}', now()
     WHERE EXISTS (SELECT 1 FROM {sessions} WHERE session_id = p_session)
    ON CONFLICT (session_id) DO NOTHING;
    UPDATE {detail} SET event_count = event_count + 1
     WHERE session_id = p_session RETURNING event_count INTO event_sequence;
  END IF;
  -- A new statement, so a new snapshot taken with the lock held.
  SELECT s.status INTO session_status FROM {sessions} s WHERE s.session_id = p_session;
  IF event_sequence IS NULL OR session_status IS NULL OR session_status = ANY(p_closed) THEN
    IF event_sequence IS NOT NULL THEN  -- give the number back: no gap
      UPDATE {detail} SET event_count = event_count - 1 WHERE session_id = p_session;
    END IF;
    event_sequence := NULL;
    RETURN;
  END IF;
  INSERT INTO {events} (session_id, sequence, event_type, role, content, parts, created_at)
  VALUES (p_session, event_sequence, p_type, p_role, p_content, p_parts, now())
  RETURNING id, {events}.created_at INTO event_id, created_at;
END
$$ LANGUAGE plpgsql VOLATILE;
""")


class Migration(migrations.Migration):

    dependencies = [
        ("agent_sessions", "0003_session_events_immutable"),
    ]

    operations = [
        migrations.RunPython(create_function, migrations.RunPython.noop),
        migrations.RunSQL(migrations.RunSQL.noop, f"DROP FUNCTION IF EXISTS {SIGNATURE};"),
    ]
