"""Every conflict belongs to the project of its task(s): detection never pairs two projects.

Frozen: the SQL this migration ran, not today's code. Existing conflicts join the default
project (MCP_PROJECT_ID) through the column default; secondary indexes lead with
project_id.
"""

from django.conf import settings
from django.db import migrations, models

from foundation.core.projects import default_project

S = settings.MCP_SCHEMA
DEFAULT = "'" + settings.MCP_PROJECT_ID.replace("'", "''") + "'"

FORWARD = f"""
ALTER TABLE "{S}".context_conflicts ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};
DROP INDEX "{S}".idx_conflicts_task_a;
DROP INDEX "{S}".idx_conflicts_task_b;
DROP INDEX "{S}".idx_conflicts_status;
DROP INDEX "{S}".idx_conflicts_severity;
DROP INDEX "{S}".idx_conflicts_unresolved;
CREATE INDEX idx_conflicts_project_task_a ON "{S}".context_conflicts(project_id, task_a_id);
CREATE INDEX idx_conflicts_project_task_b ON "{S}".context_conflicts(project_id, task_b_id);
CREATE INDEX idx_conflicts_project_status ON "{S}".context_conflicts(project_id, resolution_status);
CREATE INDEX idx_conflicts_project_severity ON "{S}".context_conflicts(project_id, severity);
CREATE INDEX idx_conflicts_project_unresolved ON "{S}".context_conflicts(project_id, detected_at DESC)
  WHERE resolution_status = 'unresolved';
"""
REVERSE = f"""
DROP INDEX "{S}".idx_conflicts_project_task_a;
DROP INDEX "{S}".idx_conflicts_project_task_b;
DROP INDEX "{S}".idx_conflicts_project_status;
DROP INDEX "{S}".idx_conflicts_project_severity;
DROP INDEX "{S}".idx_conflicts_project_unresolved;
CREATE INDEX idx_conflicts_task_a ON "{S}".context_conflicts(task_a_id);
CREATE INDEX idx_conflicts_task_b ON "{S}".context_conflicts(task_b_id);
CREATE INDEX idx_conflicts_status ON "{S}".context_conflicts(resolution_status);
CREATE INDEX idx_conflicts_severity ON "{S}".context_conflicts(severity);
CREATE INDEX idx_conflicts_unresolved ON "{S}".context_conflicts(resolution_status)
  WHERE resolution_status = 'unresolved';
ALTER TABLE "{S}".context_conflicts DROP COLUMN project_id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('conflicts', '0003_task_lock_hint_moved_to_locks'),
        ('orchestrator', '0004_projects'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[migrations.AddField(
                model_name='contextconflict', name='project_id',
                field=models.CharField(default=default_project, max_length=255))],
        ),
    ]
