"""What the conflict-resolution console shows: the evidence side by side."""

from __future__ import annotations

import json
from typing import Any

from conflicts.models import ContextConflict
from contexts.models import TaskContext
from contexts.services import representation as task_repr

# Labels of the two sides, for the types whose sides are not two tasks.
SIDE_LABELS = {
    "state_mismatch": ("Postgres (source of truth)", "Redis cache"),
    "data_inconsistency": ("Postgres (source of truth)", "File backup"),
    "lock_collision": ("Expected", "Lock left in Redis"),
    "version_divergence": ("Expected", "Recovery versions"),
}


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, default=str, ensure_ascii=False)


def _task_value(task_id: str | None, field: str,
                tasks: dict[str, TaskContext] | None = None) -> Any:
    """The task's current ``field``; ``tasks``: the tasks read already (a list of
    conflicts reads its tasks in one query), else one query."""
    if tasks is not None:
        task = tasks.get(task_id or "")
    else:
        task = TaskContext.objects.filter(task_id=task_id).first() if task_id else None
    return task_repr.task_part(task).get(field) if task else None


def tasks_of(conflicts: list[ContextConflict]) -> dict[str, TaskContext]:
    """The tasks of ``conflicts`` by id, in one query (for ``sides`` and the template)."""
    ids = {c.task_a_id for c in conflicts} | {c.task_b_id for c in conflicts if c.task_b_id}
    return {t.task_id: t for t in TaskContext.objects.filter(task_id__in=ids)}


def sides(conflict: ContextConflict,
          tasks: dict[str, TaskContext] | None = None) -> dict[str, Any]:
    """{field, location, a: {label, value}, b: {label, value}} for the conflict page."""
    evidence = conflict.evidence if isinstance(conflict.evidence, dict) else {}
    field = evidence.get("field") or ""
    expected, actual = evidence.get("expectedValue"), evidence.get("actualValue")
    if conflict.conflict_type == "file_conflict":
        # Show each task's whole (current) key file list; the shared ones are the evidence.
        a_value, b_value = (_task_value(conflict.task_a_id, "keyFiles", tasks),
                            _task_value(conflict.task_b_id, "keyFiles", tasks))
    else:
        a_value, b_value = expected, actual
    label_a, label_b = SIDE_LABELS.get(
        conflict.conflict_type,
        (f"Task A: {conflict.task_a_id}", f"Task B: {conflict.task_b_id or '-'}"))
    return {"field": field, "location": evidence.get("location") or "",
            "shared": actual if conflict.conflict_type == "file_conflict" else None,
            "a": {"label": label_a, "value": _pretty(a_value)},
            "b": {"label": label_b, "value": _pretty(b_value)}}


def resolved_value_template(conflict: ContextConflict,
                            tasks: dict[str, TaskContext] | None = None) -> str:
    """A starting point for merge/custom: each task's current value of the evidence field."""
    evidence = conflict.evidence if isinstance(conflict.evidence, dict) else {}
    fields = [f for f in str(evidence.get("field") or "").split(",")
              if f in task_repr.FIELD_COLUMNS]
    value = {task_id: {f: _task_value(task_id, f, tasks) for f in fields}
             for task_id in (conflict.task_a_id, conflict.task_b_id) if task_id}
    return _pretty(value)
