"""Every relationship joins two tasks of one project.

Frozen: the SQL this migration ran, not today's code. Existing relationships join the
default project (MCP_PROJECT_ID) through the column default; secondary indexes lead with
project_id (the unique (source, target, type) stays as the spec has it).
"""

from django.conf import settings
from django.db import migrations, models

from foundation.core.projects import default_project

S = settings.MCP_SCHEMA
DEFAULT = "'" + settings.MCP_PROJECT_ID.replace("'", "''") + "'"

FORWARD = f"""
ALTER TABLE "{S}".task_relationships ADD COLUMN project_id VARCHAR(255) NOT NULL DEFAULT {DEFAULT};
DROP INDEX "{S}".idx_relationships_source;
DROP INDEX "{S}".idx_relationships_target;
DROP INDEX "{S}".idx_relationships_type;
CREATE INDEX idx_relationships_project_source ON "{S}".task_relationships(project_id, source_task_id);
CREATE INDEX idx_relationships_project_target ON "{S}".task_relationships(project_id, target_task_id);
CREATE INDEX idx_relationships_project_type ON "{S}".task_relationships(project_id, relationship_type);
"""
REVERSE = f"""
DROP INDEX "{S}".idx_relationships_project_source;
DROP INDEX "{S}".idx_relationships_project_target;
DROP INDEX "{S}".idx_relationships_project_type;
CREATE INDEX idx_relationships_source ON "{S}".task_relationships(source_task_id);
CREATE INDEX idx_relationships_target ON "{S}".task_relationships(target_task_id);
CREATE INDEX idx_relationships_type ON "{S}".task_relationships(relationship_type);
ALTER TABLE "{S}".task_relationships DROP COLUMN project_id;
"""


class Migration(migrations.Migration):

    dependencies = [
        ('graph', '0004_session_work_moved_to_sessions'),
        ('orchestrator', '0004_projects'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunSQL(FORWARD, REVERSE)],
            state_operations=[migrations.AddField(
                model_name='taskrelationship', name='project_id',
                field=models.CharField(default=default_project, max_length=255))],
        ),
    ]
