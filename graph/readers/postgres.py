"""Graph answers from Postgres: task_contexts plus recursive CTEs over task_relationships.

Used when ENABLE_NEO4J is off and as the fallback while the graph server is
down. Semantics match graph.readers.cypher exactly (see tests/graph).
"""

from __future__ import annotations

from typing import Any

from django.db import connection

from foundation.core.db import qualified
from graph.readers import Edge, Node, edge_order, make_edge, make_node, node_order, sortable_stamp
from graph.types import GRAPH_LABELS
from sessions.services.work import WORK_TABLE

_NODE_COLUMNS = "t.task_id, t.name, t.status, t.current_phase, t.priority, t.score"
# The project of the task named by the next parameter: relationships and work records
# never leave it, and their indexes lead with project_id.
_PROJECT_OF = f"SELECT project_id AS id FROM {qualified('task_contexts')} WHERE task_id = %s"
_TASK_KINDS = list(GRAPH_LABELS)


def _rows(sql: str, params: list[Any] | dict[str, Any]) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def _node(row: tuple) -> Node:
    return make_node(row[0], row[1], row[2], row[3], row[4], row[5])


def _scope(alias: str, task_ids: set[str] | None) -> tuple[str, list[Any]]:
    if task_ids is None:
        return "", []
    return f" AND {alias}.task_id = ANY(%s)", [sorted(task_ids)]


def _waits_on_unfinished(alias: str) -> str:
    """SQL true when the task ``alias`` must wait: an unfinished task BLOCKS it (stored
    source = the blocker) or it DEPENDS_ON an unfinished task (stored source =
    the dependent task, target = what it waits for). Unfinished = not 'completed', for
    both kinds (graph.readers.cypher asks the same)."""
    rels, tasks = qualified("task_relationships"), qualified("task_contexts")
    return (f"(EXISTS (SELECT 1 FROM {rels} r "
            f"JOIN {tasks} o ON o.task_id = r.source_task_id "
            f"WHERE r.target_task_id = {alias}.task_id AND r.relationship_type = 'blocks' "
            "AND COALESCE(o.status, 'pending') <> 'completed') "
            f"OR EXISTS (SELECT 1 FROM {rels} r "
            f"JOIN {tasks} o ON o.task_id = r.target_task_id "
            f"WHERE r.source_task_id = {alias}.task_id AND r.relationship_type = 'depends_on' "
            "AND COALESCE(o.status, 'pending') <> 'completed'))")



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

class PostgresReader:
    name = "postgres"

    def existing(self, task_ids: set[str]) -> set[str]:
        rows = _rows(f"SELECT task_id FROM {qualified('task_contexts')} WHERE task_id = ANY(%s)",
                     [sorted(task_ids)])
        return {r[0] for r in rows}

    def nodes(self, task_ids: set[str] | None) -> list[Node]:
        return self._tasks_where("true", task_ids)

    def neighborhood(self, task_id: str, depth: int) -> set[str]:
        # Walk edges of every task type in both directions; UNION drops repeated
        # (task, depth) pairs so the walk stays bounded by the number of tasks per level.
        rels = qualified("task_relationships")
        rows = _rows(
            f"""WITH RECURSIVE walk(task_id, depth) AS (
                    SELECT %s::varchar, 0
                  UNION
                    SELECT n.task_id, w.depth + 1
                    FROM walk w
                    CROSS JOIN ({_PROJECT_OF}) p
                    CROSS JOIN LATERAL (
                        SELECT r.target_task_id AS task_id FROM {rels} r
                        WHERE r.project_id = p.id AND r.source_task_id = w.task_id
                          AND r.relationship_type = ANY(%s)
                      UNION ALL
                        SELECT r.source_task_id FROM {rels} r
                        WHERE r.project_id = p.id AND r.target_task_id = w.task_id
                          AND r.relationship_type = ANY(%s)
                    ) n
                    WHERE w.depth < %s
                )
                SELECT DISTINCT task_id FROM walk""",
            [task_id, task_id, _TASK_KINDS, _TASK_KINDS, depth])
        return {r[0] for r in rows}

    def _edges(self, where: str, params: list[Any]) -> list[Edge]:
        rows = _rows(
            f"SELECT r.source_task_id, r.target_task_id, r.relationship_type, "
            f"r.metadata->>'reason', r.strength FROM {qualified('task_relationships')} r "
            f"JOIN {qualified('task_contexts')} a ON a.task_id = r.source_task_id "
            f"JOIN {qualified('task_contexts')} b ON b.task_id = r.target_task_id "
            f"WHERE r.relationship_type = ANY(%s){where}", [_TASK_KINDS, *params])
        return sorted((make_edge(s, t, k, reason if k == "blocks" else None,
                                 strength if k == "depends_on" else None)
                       for s, t, k, reason, strength in rows), key=edge_order)

    def edges(self, task_ids: set[str] | None) -> list[Edge]:
        if task_ids is None:
            return self._edges("", [])
        ids = sorted(task_ids)
        return self._edges(" AND r.source_task_id = ANY(%s) AND r.target_task_id = ANY(%s)",
                           [ids, ids])

    def edges_touching(self, task_id: str) -> list[Edge]:
        return self._edges(f" AND r.project_id = ({_PROJECT_OF}) "
                           "AND (r.source_task_id = %s OR r.target_task_id = %s)",
                           [task_id, task_id, task_id])

    def _tasks_where(self, condition: str, task_ids: set[str] | None) -> list[Node]:
        where, params = _scope("t", task_ids)
        rows = _rows(f"SELECT {_NODE_COLUMNS} FROM {qualified('task_contexts')} t "
                     f"WHERE {condition}{where}", params)
        return sorted((_node(r) for r in rows), key=node_order)

    def ready(self, task_ids: set[str] | None) -> list[Node]:
        return self._tasks_where("COALESCE(t.status, 'pending') = 'pending' "
                                 f"AND NOT {_waits_on_unfinished('t')}", task_ids)

    def blocked(self, task_ids: set[str] | None) -> list[Node]:
        return self._tasks_where(
            "COALESCE(t.status, 'pending') NOT IN ('completed', 'archived') "
            f"AND (t.status = 'blocked' OR {_waits_on_unfinished('t')})", task_ids)

    def unfinished_blockers(self, task_id: str) -> list[Node]:
        return [_node(row) for row in unfinished_blocker_rows(task_id)]

    def agents(self, task_id: str) -> list[dict[str, str]]:
        # The task's agentType, and the agents of the live sessions that worked on it.
        rows = _rows(
            f"SELECT agent_type FROM {qualified('task_contexts')} "
            "WHERE task_id = %s AND COALESCE(agent_type, '') <> '' "
            f"UNION SELECT w.agent_id FROM {WORK_TABLE} w JOIN {qualified('active_sessions')} s "
            f"ON s.session_id = w.session_id WHERE w.project_id = ({_PROJECT_OF}) "
            "AND w.task_id = %s AND w.agent_id IS NOT NULL",
            [task_id, task_id, task_id])
        return [{"agentId": r[0], "type": r[0]} for r in sorted(rows)]

    def recent_sessions(self, task_id: str, limit: int) -> list[dict[str, str]]:
        rows = _rows(f"SELECT w.session_id, w.started_at FROM {WORK_TABLE} w "
                     f"JOIN {qualified('active_sessions')} s ON s.session_id = w.session_id "
                     f"WHERE w.project_id = ({_PROJECT_OF}) AND w.task_id = %s "
                     "ORDER BY w.started_at DESC, w.session_id LIMIT %s",
                     [task_id, task_id, limit])
        return [{"sessionId": s, "startedAt": sortable_stamp(started)} for s, started in rows]


POSTGRES_READER = PostgresReader()
