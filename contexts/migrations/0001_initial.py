"""The spec's schema: the schemas, the trigger functions, the four context tables.

Frozen: the SQL this migration ran, not today's code. Only the configured names are
substituted: the schema (MCP_SCHEMA), its internal schema ("<schema>_internal") and the
default project (MCP_PROJECT_ID).

Differences from the spec's script, on purpose:
- save_context_version versions a change to ANY content column (not only four), and
  increment_version bumps the version only then, so version numbers and version rows
  stay one-to-one and consecutive; timestamp-only updates make neither (the bookkeeping
  columns are updated_at, last_session_at, version and created_at).
- auto_save_context_version also fires AFTER INSERT, so version 1 (the state a task was
  created with) can be rolled back to like any other.
- Who and why come from transaction-local settings (orchestrator.change_type, ...).
- Every name is schema-qualified, so a raw UPDATE from a connection whose search_path
  lacks the schema versions just the same.
- context_versions is immutable: a guard in the internal schema refuses UPDATE/DELETE
  unless the transaction sets orchestrator.allow_version_pruning = 'on'.
"""

import django.db.models.functions.datetime
from django.conf import settings
from django.db import migrations, models

S = settings.MCP_SCHEMA
I = f"{S}_internal"  # noqa: E741 - the internal schema: guards and history, not spec tables


def spec_table(name):
    """``db_table`` of a table in S: Django quotes it as "schema"."name"."""
    return f'{S}"."{name}'


def sql_literal(value):
    return "NULL" if value is None else "'" + value.replace("'", "''") + "'"


# The seeded global_context row: the spec's own project has its name and description.
if settings.MCP_PROJECT_ID == "story-portal-app":
    _name, _description = "Story Portal App", "Full-stack story collaboration platform"
else:
    _name, _description = settings.MCP_PROJECT_ID, None
PROJECT_ID = sql_literal(settings.MCP_PROJECT_ID)
PROJECT_NAME = sql_literal(_name)
PROJECT_DESCRIPTION = sql_literal(_description)

CREATE_SCHEMA_AND_FUNCTIONS = f"""
CREATE SCHEMA IF NOT EXISTS "{S}";
CREATE SCHEMA IF NOT EXISTS "{I}";

CREATE OR REPLACE FUNCTION "{S}".update_updated_at()
RETURNS TRIGGER AS $$
BEGIN
  NEW.updated_at = NOW();
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{S}".increment_version()
RETURNS TRIGGER AS $$
BEGIN
  IF (to_jsonb(NEW) - ARRAY['updated_at','last_session_at','version','created_at']) IS DISTINCT FROM (to_jsonb(OLD) - ARRAY['updated_at','last_session_at','version','created_at']) THEN
    NEW.version = COALESCE(OLD.version, 0) + 1;
  ELSE
    NEW.version = OLD.version;
  END IF;
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{S}".save_context_version()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND (to_jsonb(NEW) - ARRAY['updated_at','last_session_at','version','created_at']) IS NOT DISTINCT FROM (to_jsonb(OLD) - ARRAY['updated_at','last_session_at','version','created_at']) THEN
    RETURN NEW;
  END IF;
  INSERT INTO "{S}".context_versions
    (task_id, version, snapshot, change_type, change_summary, session_id, created_by)
  VALUES (
    NEW.task_id, NEW.version, to_jsonb(NEW),
    COALESCE(NULLIF(current_setting('orchestrator.change_type', true), ''), 'auto_save'),
    NULLIF(current_setting('orchestrator.change_summary', true), ''),
    NULLIF(current_setting('orchestrator.session_id', true), ''),
    NULLIF(current_setting('orchestrator.created_by', true), '')
  );
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION "{I}".forbid_mutation()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'DELETE' AND current_setting('orchestrator.allow_version_pruning', true) = 'on' THEN
    RETURN OLD;
  END IF;
  RAISE EXCEPTION '% rows are immutable (% refused)', TG_TABLE_NAME, TG_OP
    USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""

DROP_SCHEMA_AND_FUNCTIONS = f"""
DROP FUNCTION IF EXISTS "{I}".forbid_mutation();
DROP FUNCTION IF EXISTS "{S}".save_context_version();
DROP FUNCTION IF EXISTS "{S}".increment_version();
DROP FUNCTION IF EXISTS "{S}".update_updated_at();
DROP SCHEMA IF EXISTS "{I}";
DROP SCHEMA IF EXISTS "{S}";
"""

CREATE_CONTEXT_TABLES = f"""
CREATE TABLE "{S}".task_contexts (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id VARCHAR(255) UNIQUE NOT NULL,
  name VARCHAR(500) NOT NULL,
  description TEXT,
  agent_type VARCHAR(100),
  status VARCHAR(50) DEFAULT 'pending',
  priority INTEGER DEFAULT 50,
  current_phase VARCHAR(255),
  iteration INTEGER DEFAULT 0,
  score DECIMAL(5,2),
  locked_elements JSONB DEFAULT '[]',
  immediate_context JSONB,
  key_files JSONB,
  technical_decisions JSONB,
  resume_prompt TEXT,
  keywords JSONB,
  token_estimate INTEGER,
  created_at TIMESTAMPTZ DEFAULT NOW(),
  updated_at TIMESTAMPTZ DEFAULT NOW(),
  last_session_at TIMESTAMPTZ,
  version INTEGER DEFAULT 1
);

CREATE TABLE "{S}".context_versions (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  task_id VARCHAR(255) NOT NULL,
  version INTEGER NOT NULL,
  snapshot JSONB NOT NULL,
  change_summary TEXT,
  change_type VARCHAR(50),
  created_by VARCHAR(255),
  session_id VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW(),
  UNIQUE(task_id, version)
);

CREATE TABLE "{S}".checkpoints (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  checkpoint_id VARCHAR(255) UNIQUE NOT NULL,
  label VARCHAR(500) NOT NULL,
  description TEXT,
  checkpoint_type VARCHAR(50) DEFAULT 'manual',
  task_id VARCHAR(255),
  scope VARCHAR(50) NOT NULL,
  included_tasks JSONB DEFAULT '[]',
  snapshot JSONB NOT NULL,
  es_memory_id VARCHAR(255),
  created_by VARCHAR(255),
  session_id VARCHAR(255),
  created_at TIMESTAMPTZ DEFAULT NOW()
);

CREATE TABLE "{S}".global_context (
  id UUID PRIMARY KEY DEFAULT gen_random_uuid(),
  project_id VARCHAR(255) UNIQUE NOT NULL,
  project_name VARCHAR(500) NOT NULL,
  description TEXT,
  hard_rules JSONB DEFAULT '[]',
  tech_stack JSONB DEFAULT '[]',
  key_paths JSONB DEFAULT '{{}}',
  services JSONB DEFAULT '{{}}',
  active_task_id VARCHAR(255),
  orchestrator_context JSONB DEFAULT '{{}}',
  created_at TIMESTAMPTZ DEFAULT NOW(),
  updated_at TIMESTAMPTZ DEFAULT NOW(),
  version INTEGER DEFAULT 1
);

CREATE INDEX idx_task_contexts_status ON "{S}".task_contexts(status);
CREATE INDEX idx_task_contexts_priority ON "{S}".task_contexts(priority);
CREATE INDEX idx_task_contexts_updated ON "{S}".task_contexts(updated_at DESC);
CREATE INDEX idx_task_contexts_keywords ON "{S}".task_contexts USING GIN(keywords);

CREATE INDEX idx_context_versions_task ON "{S}".context_versions(task_id);
CREATE INDEX idx_context_versions_created ON "{S}".context_versions(created_at DESC);
CREATE INDEX idx_context_versions_session ON "{S}".context_versions(session_id);

CREATE INDEX idx_checkpoints_task ON "{S}".checkpoints(task_id);
CREATE INDEX idx_checkpoints_type ON "{S}".checkpoints(checkpoint_type);
CREATE INDEX idx_checkpoints_created ON "{S}".checkpoints(created_at DESC);
CREATE INDEX idx_checkpoints_label ON "{S}".checkpoints(label);

CREATE TRIGGER update_task_contexts_timestamp
  BEFORE UPDATE ON "{S}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{S}".update_updated_at();

CREATE TRIGGER increment_task_version
  BEFORE UPDATE ON "{S}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{S}".increment_version();

CREATE TRIGGER auto_save_context_version
  AFTER INSERT OR UPDATE ON "{S}".task_contexts
  FOR EACH ROW EXECUTE FUNCTION "{S}".save_context_version();

CREATE TRIGGER update_global_context_timestamp
  BEFORE UPDATE ON "{S}".global_context
  FOR EACH ROW EXECUTE FUNCTION "{S}".update_updated_at();

CREATE TRIGGER increment_global_version
  BEFORE UPDATE ON "{S}".global_context
  FOR EACH ROW EXECUTE FUNCTION "{S}".increment_version();

CREATE TRIGGER context_versions_immutable
  BEFORE UPDATE OR DELETE ON "{S}".context_versions
  FOR EACH ROW EXECUTE FUNCTION "{I}".forbid_mutation();

INSERT INTO "{S}".global_context (project_id, project_name, description)
VALUES ({PROJECT_ID}, {PROJECT_NAME}, {PROJECT_DESCRIPTION})
ON CONFLICT (project_id) DO NOTHING;
"""

DROP_CONTEXT_TABLES = f"""
DROP TABLE IF EXISTS "{S}".global_context;
DROP TABLE IF EXISTS "{S}".checkpoints;
DROP TABLE IF EXISTS "{S}".context_versions;
DROP TABLE IF EXISTS "{S}".task_contexts;
"""


STATE = [
    migrations.CreateModel(
        name='Checkpoint',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('checkpoint_id', models.CharField(max_length=255, unique=True)),
            ('label', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('checkpoint_type', models.CharField(db_default='manual', max_length=50, null=True)),
            ('task_id', models.CharField(blank=True, max_length=255, null=True)),
            ('scope', models.CharField(max_length=50)),
            ('included_tasks', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('snapshot', models.JSONField()),
            ('es_memory_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('session_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': spec_table('checkpoints'),
            'ordering': ['-created_at'],
        },
    ),
    migrations.CreateModel(
        name='GlobalContext',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('project_id', models.CharField(max_length=255, unique=True)),
            ('project_name', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('hard_rules', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('tech_stack', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('key_paths', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('services', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('active_task_id', models.CharField(blank=True, max_length=255, null=True)),
            ('orchestrator_context', models.JSONField(db_default=models.Value({}, models.JSONField()), null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('updated_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('version', models.IntegerField(db_default=1, null=True)),
        ],
        options={
            'verbose_name_plural': 'global context',
            'db_table': spec_table('global_context'),
        },
    ),
    migrations.CreateModel(
        name='TaskContext',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('task_id', models.CharField(max_length=255, unique=True)),
            ('name', models.CharField(max_length=500)),
            ('description', models.TextField(blank=True, null=True)),
            ('agent_type', models.CharField(blank=True, max_length=100, null=True)),
            ('status', models.CharField(db_default='pending', max_length=50, null=True)),
            ('priority', models.IntegerField(db_default=50, null=True)),
            ('current_phase', models.CharField(blank=True, max_length=255, null=True)),
            ('iteration', models.IntegerField(db_default=0, null=True)),
            ('score', models.DecimalField(blank=True, decimal_places=2, max_digits=5, null=True)),
            ('locked_elements', models.JSONField(db_default=models.Value([], models.JSONField()), null=True)),
            ('immediate_context', models.JSONField(blank=True, null=True)),
            ('key_files', models.JSONField(blank=True, null=True)),
            ('technical_decisions', models.JSONField(blank=True, null=True)),
            ('resume_prompt', models.TextField(blank=True, null=True)),
            ('keywords', models.JSONField(blank=True, null=True)),
            ('token_estimate', models.IntegerField(blank=True, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('updated_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
            ('last_session_at', models.DateTimeField(blank=True, null=True)),
            ('version', models.IntegerField(db_default=1, null=True)),
        ],
        options={
            'db_table': spec_table('task_contexts'),
            'ordering': ['-priority', 'task_id'],
        },
    ),
    migrations.CreateModel(
        name='ContextVersion',
        fields=[
            ('id', models.UUIDField(db_default=models.Func(function='gen_random_uuid'), editable=False, primary_key=True, serialize=False)),
            ('task_id', models.CharField(max_length=255)),
            ('version', models.IntegerField()),
            ('snapshot', models.JSONField()),
            ('change_summary', models.TextField(blank=True, null=True)),
            ('change_type', models.CharField(blank=True, max_length=50, null=True)),
            ('created_by', models.CharField(blank=True, max_length=255, null=True)),
            ('session_id', models.CharField(blank=True, max_length=255, null=True)),
            ('created_at', models.DateTimeField(db_default=django.db.models.functions.datetime.Now(), null=True)),
        ],
        options={
            'db_table': spec_table('context_versions'),
            'ordering': ['task_id', '-version'],
            'constraints': [models.UniqueConstraint(fields=('task_id', 'version'), name='context_versions_task_id_version_key')],
        },
    ),
]


class Migration(migrations.Migration):

    initial = True

    dependencies = [
    ]

    operations = [
        migrations.RunSQL(CREATE_SCHEMA_AND_FUNCTIONS, DROP_SCHEMA_AND_FUNCTIONS),
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(CREATE_CONTEXT_TABLES, DROP_CONTEXT_TABLES)],
            state_operations=STATE,
        ),
    ]
