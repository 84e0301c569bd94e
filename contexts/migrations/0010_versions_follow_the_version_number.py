"""A version row is written when the version number moved, instead of by comparing the
row's JSON once more.

Frozen: the SQL this migration ran, not today's code.

increment_version (BEFORE UPDATE, on task_contexts and on global_context) already decides
whether an update changed content: it compares the row's JSON less the bookkeeping columns
and sets the new version to the old one plus one, or back to the old one, whatever the
statement wrote. So after it, "the version moved" and "content changed" are the same
fact, and the AFTER triggers' own comparison (two more conversions of the whole row to
JSON, about 0.13 ms of Postgres CPU per update of a task of 90 key files) tells them
nothing new. Bookkeeping is still only updated_at, last_session_at, version and
created_at, and the other BEFORE UPDATE trigger (update_updated_at) sets only
updated_at: a trigger that rewrote content after increment_version would have to
version it itself.
"""

from django.conf import settings
from django.db import migrations

S = settings.MCP_SCHEMA
I = f"{S}_internal"  # noqa: E741 - the internal schema, as contexts/0001 names it

SETTINGS = """
    COALESCE(NULLIF(current_setting('orchestrator.change_type', true), ''), 'auto_save'),
    NULLIF(current_setting('orchestrator.change_summary', true), ''),
    NULLIF(current_setting('orchestrator.session_id', true), ''),
    NULLIF(current_setting('orchestrator.created_by', true), '')"""
BY_VERSION = "NEW.version IS NOT DISTINCT FROM OLD.version"
BY_JSON = ("(to_jsonb(NEW) - ARRAY['updated_at','last_session_at','version','created_at']) "
           "IS NOT DISTINCT FROM (to_jsonb(OLD) - "
           "ARRAY['updated_at','last_session_at','version','created_at'])")


def save_version(function: str, versions: str, key_column: str, key: str,
                 unchanged: str) -> str:
    """One AFTER trigger function: a row of ``versions`` unless ``unchanged`` holds."""
    return f"""
CREATE OR REPLACE FUNCTION {function}()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'UPDATE' AND {unchanged} THEN
    RETURN NEW;
  END IF;
  INSERT INTO {versions}
    ({key_column}, project_id, version, snapshot, change_type, change_summary, session_id, created_by)
  VALUES ({key}, NEW.project_id, NEW.version, to_jsonb(NEW),{SETTINGS});
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;
"""


def functions(unchanged: str) -> str:
    return (save_version(f'"{S}".save_context_version', f'"{S}".context_versions',
                         "task_id", "NEW.task_id", unchanged)
            + save_version(f'"{I}".save_global_context_version',
                           f'"{I}".global_context_versions', "context_id", "NEW.id",
                           unchanged))


class Migration(migrations.Migration):

    dependencies = [("contexts", "0009_project_learnings")]

    operations = [migrations.RunSQL(functions(BY_VERSION), functions(BY_JSON))]
