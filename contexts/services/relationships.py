"""The task relationships the context services need, asked of the graph app, which owns
them (it writes task_relationships and mirrors it to the graph server) and registers its
Postgres reader here from above (GraphConfig.ready): contexts sits below graph. A switch
or a context read never waits on the graph server. The stored vocabulary (which types
exist, how inverse types are stored) is the graph's: graph.types.
"""

from __future__ import annotations

from collections.abc import Callable

# (task_id) -> the rows of the tasks blocking it that are not completed, by task id:
# (task_id, name, status, current_phase, priority, score); none until graph registers.
_blocker_rows: Callable[[str], list[tuple]] = lambda task_id: []  # noqa: E731


def register_blocker_reader(reader: Callable[[str], list[tuple]]) -> None:
    """The graph app's reader of a task's unfinished blockers."""
    global _blocker_rows
    _blocker_rows = reader


def unfinished_blockers(task_id: str) -> list[dict[str, str]]:
    """[{taskId, name}] of the tasks that block ``task_id`` and are not completed."""
    return [{"taskId": row[0], "name": row[1]} for row in _blocker_rows(task_id)]
