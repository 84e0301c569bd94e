"""Every session, handoff and work record belongs to a project.

Frozen: the SQL this migration ran, not today's code. Existing sessions join the default
project (MCP_PROJECT_ID) through the column default. Handoffs were kept per projectDir;
now there is one active handoff per project: the newest active note stays active, the
directory it came from is kept in project_dir. Secondary indexes lead with project_id;
the live-session index behind the crash sweep covers only live sessions, so the sweep
across every project reads a small index.
"""

from django.conf import settings
from django.db import migrations, models

from foundation.core.projects import default_project

S = settings.MCP_SCHEMA


def sql_literal(value):
    return "'" + value.replace("'", "''") + "'"


DEFAULT = sql_literal(settings.MCP_PROJECT_ID)

SESSIONS_FORWARD = f"""
ALTER TABLE "{S}".active_sessions ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};
DROP INDEX "{S}".idx_sessions_status;
DROP INDEX "{S}".idx_sessions_heartbeat;
DROP INDEX "{S}".idx_sessions_recovery;
DROP INDEX "{S}".idx_sessions_task;
CREATE INDEX idx_sessions_project_status ON "{S}".active_sessions(project_id, status);
CREATE INDEX idx_sessions_project_live ON "{S}".active_sessions(project_id, last_heartbeat)
  WHERE status IN ('active', 'compacted');
CREATE INDEX idx_sessions_project_recovery ON "{S}".active_sessions(project_id, recovery_needed)
  WHERE recovery_needed = TRUE;
CREATE INDEX idx_sessions_project_task ON "{S}".active_sessions(project_id, task_id);
CREATE INDEX idx_sessions_project_started ON "{S}".active_sessions(project_id, started_at DESC);
"""
SESSIONS_REVERSE = f"""
DROP INDEX "{S}".idx_sessions_project_status;
DROP INDEX "{S}".idx_sessions_project_live;
DROP INDEX "{S}".idx_sessions_project_recovery;
DROP INDEX "{S}".idx_sessions_project_task;
DROP INDEX "{S}".idx_sessions_project_started;
CREATE INDEX idx_sessions_status ON "{S}".active_sessions(status);
CREATE INDEX idx_sessions_heartbeat ON "{S}".active_sessions(last_heartbeat DESC);
CREATE INDEX idx_sessions_recovery ON "{S}".active_sessions(recovery_needed)
  WHERE recovery_needed = TRUE;
CREATE INDEX idx_sessions_task ON "{S}".active_sessions(task_id);
ALTER TABLE "{S}".active_sessions DROP COLUMN project_id;
"""

# One active handoff per project: all existing notes were of the default project.
HANDOFFS_FORWARD = f"""
UPDATE agent_sessions_sessionhandoff SET active = FALSE
 WHERE active AND id <> (SELECT id FROM agent_sessions_sessionhandoff WHERE active
                          ORDER BY created_at DESC, id LIMIT 1);
UPDATE agent_sessions_sessionhandoff
   SET project_dir = CASE WHEN project_key = {DEFAULT} THEN NULL ELSE project_key END,
       project_key = {DEFAULT};
"""


class Migration(migrations.Migration):

    dependencies = [
        ('agent_sessions', '0006_session_work'),
        ('orchestrator', '0004_projects'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(SESSIONS_FORWARD, SESSIONS_REVERSE)],
            state_operations=[migrations.AddField(
                model_name='activesession', name='project_id',
                field=models.CharField(default=default_project, max_length=255))],
        ),
        migrations.RemoveConstraint(model_name='sessionhandoff',
                                    name='one_active_handoff_per_project'),
        migrations.RemoveIndex(model_name='sessionhandoff', name='handoff_project_recent'),
        migrations.AddField(model_name='sessionhandoff', name='project_dir',
                            field=models.CharField(blank=True, max_length=1000, null=True)),
        migrations.RunSQL(HANDOFFS_FORWARD, migrations.RunSQL.noop),
        migrations.RenameField(model_name='sessionhandoff', old_name='project_key',
                               new_name='project_id'),
        migrations.AlterField(model_name='sessionhandoff', name='project_id',
                              field=models.CharField(default=default_project, max_length=255)),
        migrations.AddConstraint(
            model_name='sessionhandoff',
            constraint=models.UniqueConstraint(condition=models.Q(('active', True)),
                                               fields=('project_id',),
                                               name='one_active_handoff_per_project')),
        migrations.AddIndex(
            model_name='sessionhandoff',
            index=models.Index(fields=['project_id', '-created_at'],
                               name='handoff_project_recent')),
        migrations.AddField(model_name='sessionwork', name='project_id',
                            field=models.CharField(default=default_project, max_length=255)),
        migrations.RemoveIndex(model_name='sessionwork', name='graph_session_work_task_idx'),
        migrations.AddIndex(
            model_name='sessionwork',
            index=models.Index(fields=['project_id', 'task_id', '-started_at'],
                               name='graph_session_work_task_idx')),
    ]
