"""Every task, version and checkpoint belongs to a project.

Frozen: the SQL this migration ran, not today's code. Existing rows join the default
project (MCP_PROJECT_ID, through the column default); a projects row is made for every
global_context row. Versions take their task's project from the versioning trigger, so a
raw INSERT or UPDATE by another program versions into the right project too.

Secondary indexes lead with project_id (the tables could be distributed by it); the
unique constraints stay as the spec has them: task ids, checkpoint ids and (task, version)
are unique across the server.
"""

from django.conf import settings
from django.db import migrations, models

from foundation.core.projects import default_project

S = settings.MCP_SCHEMA


def sql_literal(value):
    return "'" + value.replace("'", "''") + "'"


DEFAULT = sql_literal(settings.MCP_PROJECT_ID)

FORWARD = f"""
INSERT INTO projects (id, name, created_at)
SELECT project_id, project_name, COALESCE(created_at, now()) FROM "{S}".global_context
ON CONFLICT (id) DO NOTHING;

ALTER TABLE "{S}".task_contexts ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};
ALTER TABLE "{S}".context_versions ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};
ALTER TABLE "{S}".checkpoints ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};

CREATE OR REPLACE FUNCTION "{S}".save_context_version()
RETURNS TRIGGER AS $$
BEGIN
  IF TG_OP = 'UPDATE'
     AND (to_jsonb(NEW) - ARRAY['updated_at','last_session_at','version','created_at']) IS NOT DISTINCT FROM (to_jsonb(OLD) - ARRAY['updated_at','last_session_at','version','created_at']) THEN
    RETURN NEW;
  END IF;
  INSERT INTO "{S}".context_versions
    (task_id, project_id, version, snapshot, change_type, change_summary, session_id, created_by)
  VALUES (
    NEW.task_id, NEW.project_id, NEW.version, to_jsonb(NEW),
    COALESCE(NULLIF(current_setting('orchestrator.change_type', true), ''), 'auto_save'),
    NULLIF(current_setting('orchestrator.change_summary', true), ''),
    NULLIF(current_setting('orchestrator.session_id', true), ''),
    NULLIF(current_setting('orchestrator.created_by', true), '')
  );
  RETURN NEW;
END;
$$ LANGUAGE plpgsql;

DROP INDEX "{S}".idx_task_contexts_status;
DROP INDEX "{S}".idx_task_contexts_priority;
DROP INDEX "{S}".idx_task_contexts_updated;
CREATE INDEX idx_task_contexts_project_status ON "{S}".task_contexts(project_id, status);
CREATE INDEX idx_task_contexts_project_priority ON "{S}".task_contexts(project_id, priority);
CREATE INDEX idx_task_contexts_project_updated ON "{S}".task_contexts(project_id, updated_at DESC);

DROP INDEX "{S}".idx_context_versions_task;
DROP INDEX "{S}".idx_context_versions_created;
DROP INDEX "{S}".idx_context_versions_session;
CREATE INDEX idx_context_versions_project_task ON "{S}".context_versions(project_id, task_id);
CREATE INDEX idx_context_versions_project_created ON "{S}".context_versions(project_id, created_at DESC);
CREATE INDEX idx_context_versions_project_session ON "{S}".context_versions(project_id, session_id);

DROP INDEX "{S}".idx_checkpoints_task;
DROP INDEX "{S}".idx_checkpoints_type;
DROP INDEX "{S}".idx_checkpoints_created;
DROP INDEX "{S}".idx_checkpoints_label;
CREATE INDEX idx_checkpoints_project_task ON "{S}".checkpoints(project_id, task_id);
CREATE INDEX idx_checkpoints_project_type ON "{S}".checkpoints(project_id, checkpoint_type);
CREATE INDEX idx_checkpoints_project_created ON "{S}".checkpoints(project_id, created_at DESC);
CREATE INDEX idx_checkpoints_project_label ON "{S}".checkpoints(project_id, label);
"""

REVERSE = f"""
DROP INDEX "{S}".idx_checkpoints_project_task;
DROP INDEX "{S}".idx_checkpoints_project_type;
DROP INDEX "{S}".idx_checkpoints_project_created;
DROP INDEX "{S}".idx_checkpoints_project_label;
CREATE INDEX idx_checkpoints_task ON "{S}".checkpoints(task_id);
CREATE INDEX idx_checkpoints_type ON "{S}".checkpoints(checkpoint_type);
CREATE INDEX idx_checkpoints_created ON "{S}".checkpoints(created_at DESC);
CREATE INDEX idx_checkpoints_label ON "{S}".checkpoints(label);

DROP INDEX "{S}".idx_context_versions_project_task;
DROP INDEX "{S}".idx_context_versions_project_created;
DROP INDEX "{S}".idx_context_versions_project_session;
CREATE INDEX idx_context_versions_task ON "{S}".context_versions(task_id);
CREATE INDEX idx_context_versions_created ON "{S}".context_versions(created_at DESC);
CREATE INDEX idx_context_versions_session ON "{S}".context_versions(session_id);

DROP INDEX "{S}".idx_task_contexts_project_status;
DROP INDEX "{S}".idx_task_contexts_project_priority;
DROP INDEX "{S}".idx_task_contexts_project_updated;
CREATE INDEX idx_task_contexts_status ON "{S}".task_contexts(status);
CREATE INDEX idx_task_contexts_priority ON "{S}".task_contexts(priority);
CREATE INDEX idx_task_contexts_updated ON "{S}".task_contexts(updated_at DESC);

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

ALTER TABLE "{S}".checkpoints DROP COLUMN project_id;
ALTER TABLE "{S}".context_versions DROP COLUMN project_id;
ALTER TABLE "{S}".task_contexts DROP COLUMN project_id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('contexts', '0003_global_context_versions'),
        ('orchestrator', '0004_projects'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[
                migrations.AddField(
                    model_name=model, name='project_id',
                    field=models.CharField(default=default_project, max_length=255)
                    if model != 'contextversion' else models.CharField(max_length=255))
                for model in ('taskcontext', 'contextversion', 'checkpoint')
            ],
        ),
    ]
