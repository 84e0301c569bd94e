"""The task relationships the context services read, straight from task_relationships.

The graph app owns the relationships (it writes the table and mirrors it to the graph
server); contexts only reads a task's direct edges, in Postgres, inside its own queries:
a switch or a context read never waits on the graph server. The stored vocabulary (which
types exist, how inverse types are stored) is the graph's: graph.types.
"""

from __future__ import annotations

from django.db import connection

from foundation.core.db import qualified

# The ready-task rule: a blocker counts until it is 'completed'.
_UNFINISHED_BLOCKERS_SQL = """
SELECT t.task_id, t.name, t.status, t.current_phase, t.priority, t.score
FROM {tasks} t JOIN {relationships} r ON r.source_task_id = t.task_id
WHERE r.project_id = (SELECT project_id FROM {tasks} WHERE task_id = %(task)s)
  AND r.target_task_id = %(task)s AND r.relationship_type = 'blocks'
  AND COALESCE(t.status, 'pending') <> 'completed'
ORDER BY t.task_id
"""


def unfinished_blocker_rows(task_id: str) -> list[tuple]:
    """Tasks that block ``task_id`` and are not completed, by task id: (task_id, name,
    status, current_phase, priority, score). Relationships stay inside the task's project."""
    with connection.cursor() as cursor:
        cursor.execute(_UNFINISHED_BLOCKERS_SQL.format(
            tasks=qualified("task_contexts"), relationships=qualified("task_relationships")),
            {"task": task_id})
        return cursor.fetchall()


def unfinished_blockers(task_id: str) -> list[dict[str, str]]:
    """[{taskId, name}] of the tasks that block ``task_id`` and are not completed."""
    return [{"taskId": row[0], "name": row[1]} for row in unfinished_blocker_rows(task_id)]
