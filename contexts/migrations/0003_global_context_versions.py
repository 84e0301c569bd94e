"""History of global_context: a table and a trigger writing one row per version.

The same rules as the task versioning of 0001: only a content change makes a version
(updated_at, last_session_at, version and created_at are bookkeeping), who and why come
from the transaction-local orchestrator.* settings, names are schema-qualified, and the
rows are immutable. The current row is recorded as the first version, so it can be
rolled back to. The table and its function live in the internal
schema next to forbid_mutation: MCP_SCHEMA holds exactly the spec's seven tables.
"""

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

S = settings.MCP_SCHEMA
I = f"{S}_internal"  # noqa: E741 - the internal schema, as contexts/0001 names it

# Frozen: the SQL this migration ran, not today's code.
CREATE = f"""
CREATE TABLE "{I}".global_context_versions (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  context_id UUID NOT NULL,
  project_id VARCHAR(255) NOT NULL,
  version INTEGER NOT NULL,
  snapshot JSONB NOT NULL,
  change_summary TEXT,
  change_type VARCHAR(50),
  created_by VARCHAR(255),
  session_id VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW(),
  CONSTRAINT global_context_versions_context_version_key UNIQUE (context_id, version)
);
CREATE INDEX global_context_versions_project ON "{I}".global_context_versions(project_id);

CREATE OR REPLACE FUNCTION "{I}".save_global_context_version()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND (to_jsonb(NEW) - ARRAY['updated_at','last_session_at','version','created_at']) IS NOT DISTINCT FROM (to_jsonb(OLD) - ARRAY['updated_at','last_session_at','version','created_at']) THEN
    RETURN NEW;
  END IF;
  INSERT INTO "{I}".global_context_versions
    (context_id, project_id, version, snapshot, change_type, change_summary, session_id, created_by)
  VALUES (
    NEW.id, NEW.project_id, NEW.version, to_jsonb(NEW),
    COALESCE(NULLIF(current_setting('orchestrator.change_type', true), ''), 'auto_save'),
    NULLIF(current_setting('orchestrator.change_summary', true), ''),
    NULLIF(current_setting('orchestrator.session_id', true), ''),
    NULLIF(current_setting('orchestrator.created_by', true), '')
  );
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER auto_save_global_context_version
  AFTER INSERT OR UPDATE ON "{S}".global_context
  FOR EACH ROW EXECUTE FUNCTION "{I}".save_global_context_version();

CREATE TRIGGER global_context_versions_immutable
  BEFORE UPDATE OR DELETE ON "{I}".global_context_versions
  FOR EACH ROW EXECUTE FUNCTION "{I}".forbid_mutation();

INSERT INTO "{I}".global_context_versions
  (context_id, project_id, version, snapshot, change_type, change_summary)
SELECT g.id, g.project_id, COALESCE(g.version, 1), to_jsonb(g), 'auto_save',
       'State when version history began'
FROM "{S}".global_context g;
"""

DROP = f"""
DROP TRIGGER IF EXISTS auto_save_global_context_version ON "{S}".global_context;
DROP FUNCTION IF EXISTS "{I}".save_global_context_version();
DROP TABLE IF EXISTS "{I}".global_context_versions;
"""

STATE = [
    migrations.CreateModel(
        name='GlobalContextVersion',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('context_id', models.UUIDField()),
            ('project_id', models.CharField(max_length=255)),
            ('version', models.IntegerField()),
            ('snapshot', models.JSONField()),
            ('change_summary', models.TextField(blank=True, null=True)),
            ('change_type', models.CharField(blank=True, max_length=50, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('session_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': f'{I}"."global_context_versions',
            'ordering': ['-version'],
            'constraints': [models.UniqueConstraint(fields=('context_id', 'version'), name='global_context_versions_context_version_key')],
        },
    ),
]


class Migration(migrations.Migration):

    dependencies = [
        ('contexts', '0002_compress_checkpoint_snapshots'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(CREATE, DROP)],
            state_operations=STATE,
        ),
    ]
