"""detect_conflicts: five detection methods over real state.

Active tasks are those with status pending, in_progress or blocked: completed and
archived tasks no longer touch their files or caches, so they conflict with nothing.
Detection runs within projects: two repositories that both have src/app.py share no
file, so tasks of two projects never pair, and every conflict carries its project.

| type               | source                                 | severity         | strength    |
|--------------------|----------------------------------------|------------------|-------------|
| file_conflict      | SQL join of the jsonb key_files arrays | high (>=3) / med | min(n/5, 1) |
|                    | (less the paths the edit policy ignores) |                |             |
| lock_collision     | Redis locks whose expiresAt is past    | high             | 1.0         |
| state_mismatch     | Redis task cache vs Postgres row       | medium           | 0.8         |
| version_divergence | >1 change_type='recovery' version      | low              | 0.5         |
| data_inconsistency | task-agents/{id}.json vs Postgres row  | medium           | 0.7         |

spec_contradiction has no detector: agents and people record it with report_conflict.

Each run also closes the open conflicts, stored before it, whose evidence no longer holds
(``close_stale``; recorded as ``auto: evidence gone``, see ``auto_close``): a
file_conflict whose two tasks share none of its paths any more (or one of them is no
longer active, or gone), a lock_collision whose lock is no longer the one seen, a
state_mismatch / data_inconsistency whose fields agree again, a version_divergence no
longer found. Only types whose method ran (not skipped) and conflicts within the run's
tasks and projects are looked at; reported conflicts (agent, manual) are left alone.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from operator import methodcaller
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.db.models import Q

from conflicts.models import ContextConflict
from conflicts.services import auto_close, representation
from conflicts.services.store import KNOWN_STATUSES, OPEN_STATUSES, Candidate, store_candidates
from contexts.models import TaskContext
from contexts.services import cache
from contexts.services import representation as task_repr
from contexts.services.edit_policy import policies_of
from foundation.backends import files, redis_store
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, failure_reason
from foundation.core.stamps import now_iso
from foundation.core.tools.schema import CONFLICT_TYPES
from locks import services as locks

logger = logging.getLogger("orchestrator.conflicts")
ACTIVE_STATUSES = ("pending", "in_progress", "blocked")
DETECTABLE_TYPES = ("file_conflict", "lock_collision", "state_mismatch", "version_divergence",
                    "data_inconsistency")
# Content fields compared between Postgres and the Redis cache (task_part shape).
CACHE_FIELDS = tuple(f for f in task_repr.FIELD_COLUMNS if f != "tokenEstimate")
# Content fields the task backup file carries.
FILE_FIELDS = ("name", "status", "currentPhase", "iteration", "immediateContext", "keyFiles",
               "technicalDecisions", "resumePrompt")
_CHUNK = 1000


def _normal(value: Any) -> Any:
    """Comparable JSON form (Decimal -> float, tuples -> lists, datetimes -> str)."""
    return json.loads(json.dumps(value, default=str))


@dataclass(frozen=True)
class Scope:
    """What a detection run looks at: ``task_ids`` (None: every active task) of
    ``project_ids`` (None: every project)."""

    task_ids: list[str] | None
    project_ids: list[str] | None

    def tasks(self) -> dict[str, str]:
        """task id -> project of the tasks a per-task method looks at."""
        query = TaskContext.objects.all()
        if self.task_ids is not None:
            query = query.filter(task_id__in=self.task_ids)
        else:
            query = query.filter(status__in=ACTIVE_STATUSES)
        if self.project_ids is not None:
            query = query.filter(project_id__in=self.project_ids)
        return dict(query.values_list("task_id", "project_id"))


# One pass groups the active tasks' key files by project and path; only paths listed by
# more than one task of a project survive, and their task lists are paired.
_FILE_OVERLAP = """
WITH shared AS (
  SELECT t.project_id, f.path, array_agg(t.task_id) AS ids
  FROM {tasks} t
  CROSS JOIN LATERAL jsonb_array_elements_text(
    CASE WHEN jsonb_typeof(t.key_files) = 'array' THEN t.key_files ELSE '[]'::jsonb END
  ) AS f(path)
  WHERE t.status = ANY(%s) AND (%s::text[] IS NULL OR t.project_id = ANY(%s::text[])){among}
  GROUP BY t.project_id, f.path HAVING count(*) > 1
)
SELECT s.project_id, a.id, b.id, array_agg(DISTINCT s.path ORDER BY s.path)
FROM shared s
CROSS JOIN LATERAL unnest(s.ids) AS a(id)
CROSS JOIN LATERAL unnest(s.ids) AS b(id)
WHERE a.id < b.id {where}
GROUP BY s.project_id, a.id, b.id
"""


def detect_file_conflicts(scope: Scope, *, among: list[str] | None = None) -> list[Candidate]:
    """Pairs of active tasks of one project sharing key files, computed by Postgres in one
    query. ``among``: only pairs of these tasks, both sides, so that only their key files
    are expanded (a claim's overlap knows its pairs; a project's other tasks, which grow
    with its history, cannot change what two tasks share)."""
    task_ids = scope.task_ids
    where = among_clause = ""
    params = [list(ACTIVE_STATUSES), scope.project_ids, scope.project_ids]
    if among is not None:
        among_clause = " AND t.task_id = ANY(%s::text[])"
        params.append(among)
    if task_ids is not None:
        where = "AND (a.id = ANY(%s) OR b.id = ANY(%s))"
        params += [task_ids, task_ids]
    # No savepoint inside a caller's transaction (the claim-overlap recorder's): nothing
    # here is undone on its own, and a savepoint costs two round trips.
    with transaction.atomic(savepoint=False), connection.cursor() as cursor:
        if among is None:
            # A project-wide scan: enough memory for the per-path aggregate of ~100k rows
            # not to spill to disk, and no Memoize over the per-task array expansion:
            # every task's key_files differ, so it only misses (~20 ms of 95 at 10k
            # tasks). A few tasks' pairs need neither.
            cursor.execute("SELECT set_config('work_mem', '64MB', true), "
                           "set_config('enable_memoize', 'off', true)")
        cursor.execute(_FILE_OVERLAP.format(tasks=qualified("task_contexts"), where=where,
                                            among=among_clause), params)
        rows = cursor.fetchall()
    # Files the project's edit policy ignores (lock files, generated code) are no one's:
    # they make no conflict and raise no severity.
    policies = policies_of({row[0] for row in rows}) if rows else {}
    found = []
    for project_id, task_a, task_b, listed in rows:
        shared = [path for path in listed if not policies[project_id].ignores(path)]
        if not shared:
            continue
        count = len(shared)
        found.append(Candidate(
            project_id=project_id, task_a_id=task_a, task_b_id=task_b,
            conflict_type="file_conflict",
            severity="high" if count >= 3 else "medium", strength=min(count / 5, 1.0),
            description=f"Tasks {task_a} and {task_b} both list {count} key file"
                        f"{'s' if count != 1 else ''}: {', '.join(shared[:5])}"
                        f"{' ...' if count > 5 else ''}",
            evidence={"field": "keyFiles", "expectedValue": [], "actualValue": list(shared),
                      "location": "task_contexts.key_files"},
            detection_method="key_files overlap (sql)"))
    return found


def detect_lock_collisions(scope: Scope) -> list[Candidate]:
    """Task locks still in Redis after their expiresAt: the holding session is gone."""
    expired = [lock for lock in locks.scan_locks(scope.task_ids) if locks.is_expired(lock)]
    projects = dict(TaskContext.objects.filter(task_id__in=[lock["taskId"] for lock in expired])
                    .values_list("task_id", "project_id"))
    found = []
    for lock in expired:
        task_id = lock["taskId"]
        project_id = projects.get(task_id)
        if project_id is None or (scope.project_ids is not None
                                  and project_id not in scope.project_ids):
            continue  # a lock of a task that is gone, or of a project not looked at
        found.append(Candidate(
            project_id=project_id, task_a_id=task_id, task_b_id=None,
            conflict_type="lock_collision",
            severity="high", strength=1.0,
            description=f"Task {task_id} is still locked by session {lock.get('sessionId')}, "
                        f"whose lock expired at {lock.get('expiresAt')}",
            evidence={"field": "lock", "expectedValue": "released or renewed before expiresAt",
                      "actualValue": lock, "location": f"redis:{locks.lock_key(task_id)}"},
            detection_method="expired redis lock"))
    return found


def _differences(expected: dict[str, Any], actual: dict[str, Any],
                 fields: tuple[str, ...]) -> list[str]:
    # Plain comparison first: both sides are JSON-shaped, so _normal is rarely needed.
    return [f for f in fields if f in actual and expected.get(f) != actual[f]
            and _normal(expected.get(f)) != _normal(actual[f])]


def _mismatch(project_id: str, task_id: str, conflict_type: str, expected: dict[str, Any],
              actual: dict[str, Any], fields: list[str], *, where: str, severity: str,
              strength: float, method: str) -> Candidate:
    return Candidate(
        project_id=project_id, task_a_id=task_id, task_b_id=None,
        conflict_type=conflict_type, severity=severity,
        strength=strength,
        description=f"{where} of task {task_id} differs from Postgres in {', '.join(fields)}",
        evidence={"field": ",".join(fields),
                  "expectedValue": {f: _normal(expected.get(f)) for f in fields},
                  "actualValue": {f: _normal(actual.get(f)) for f in fields},
                  "location": where},
        detection_method=method)


def detect_state_mismatches(scope: Scope) -> list[Candidate]:
    """Cached ``context:task:{id}`` values whose content differs from the Postgres row."""
    task_ids = list(scope.tasks())
    cached: dict[str, dict[str, Any]] = {}
    for start in range(0, len(task_ids), _CHUNK):
        chunk = task_ids[start:start + _CHUNK]
        names = [cache.task_cache_key(t) for t in chunk]
        values = redis_store.run(methodcaller("mget", names))
        for task_id, raw in zip(chunk, values, strict=True):
            doc = _loads(raw)
            if isinstance(doc, dict) and doc.get("taskId") == task_id:
                cached[task_id] = doc
    found = []
    for task in TaskContext.objects.filter(task_id__in=list(cached)):
        expected = task_repr.task_part(task)
        fields = _differences(expected, cached[task.task_id], CACHE_FIELDS)
        if fields:
            found.append(_mismatch(
                task.project_id, task.task_id, "state_mismatch", expected,
                cached[task.task_id], fields,
                where=f"redis:{cache.task_cache_key(task.task_id)}", severity="medium",
                strength=0.8, method="redis cache vs postgres"))
    return found


def _loads(raw: str | None) -> Any:
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def detect_version_divergence(scope: Scope) -> list[Candidate]:
    """Tasks with more than one recovery version: two recoveries may have diverged."""
    params: list[Any] = [scope.project_ids, scope.project_ids]
    if scope.task_ids is None:
        where = f"v.task_id IN (SELECT task_id FROM {qualified('task_contexts')} " \
                "WHERE status = ANY(%s))"
        params.append(list(ACTIVE_STATUSES))
    else:
        where = "v.task_id = ANY(%s)"
        params.append(scope.task_ids)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT v.project_id, v.task_id, array_agg(v.version ORDER BY v.version) "
            f"FROM {qualified('context_versions')} v "
            "WHERE v.change_type = 'recovery' "
            "AND (%s::text[] IS NULL OR v.project_id = ANY(%s::text[])) "
            f"AND {where} GROUP BY v.project_id, v.task_id HAVING count(*) > 1", params)
        rows = cursor.fetchall()
    return [Candidate(
        project_id=project_id, task_a_id=task_id, task_b_id=None,
        conflict_type="version_divergence", severity="low",
        strength=0.5,
        description=f"Task {task_id} has {len(versions)} recovery versions "
                    f"({', '.join(map(str, versions))})",
        evidence={"field": "version", "expectedValue": "at most one recovery version",
                  "actualValue": list(versions), "location": "context_versions"},
        detection_method="recovery versions in history")
        for project_id, task_id, versions in rows]


def _backed_up(project_id: str) -> set[str]:
    """Task ids with a file backup in the project's task-agents directory."""
    try:
        return {e.name[:-5] for e in os.scandir(files.context_dir(project_id) / "task-agents")
                if e.name.endswith(".json") and not e.name.startswith(".")}
    except FileNotFoundError:
        return set()


def detect_data_inconsistencies(scope: Scope) -> list[Candidate]:
    """Task file backups (task-agents/{id}.json of the task's project) that disagree with
    Postgres.

    Skipped while ENABLE_FILE_SYNC is off: the files are not kept in step then.
    """
    if not settings.ENABLE_FILE_SYNC:
        return []
    tasks = scope.tasks()
    on_disk = {project: _backed_up(project) for project in set(tasks.values())}
    wanted = [t for t, project in tasks.items() if t in on_disk[project]]
    found = []
    for task in TaskContext.objects.filter(task_id__in=wanted):
        backup = files.read_json(files.task_file(task.task_id, task.project_id))
        if not isinstance(backup, dict):
            continue
        expected = task_repr.task_file(task)
        fields = _differences(expected, backup, FILE_FIELDS)
        if fields:
            found.append(_mismatch(
                task.project_id, task.task_id, "data_inconsistency", expected, backup, fields,
                where=f"file:task-agents/{task.task_id}.json", severity="medium",
                strength=0.7, method="file backup vs postgres"))
    return found


DETECTORS: dict[str, Callable[[Scope], list[Candidate]]] = {
    "file_conflict": detect_file_conflicts,
    "lock_collision": detect_lock_collisions,
    "state_mismatch": detect_state_mismatches,
    "version_divergence": detect_version_divergence,
    "data_inconsistency": detect_data_inconsistencies,
}


def check_types(conflict_types: list[str] | None) -> list[str]:
    wanted = list(dict.fromkeys(conflict_types)) if conflict_types else list(CONFLICT_TYPES)
    unknown = [t for t in wanted if t not in CONFLICT_TYPES]
    if unknown:
        raise OrchestratorError("E1641", f"Unknown conflict type {unknown[0]!r}",
                                {"conflictTypes": unknown, "allowed": list(CONFLICT_TYPES)})
    return wanted


def detect_conflicts(task_ids: list[str] | None = None, conflict_types: list[str] | None = None,
                     *, project_ids: list[str] | None = None,
                     detected_by: str = "system",
                     progress: Callable[[int, int], None] | None = None) -> dict[str, Any]:
    """Run the detectors over ``project_ids`` (None: every project), store what is new, and
    answer with the conflicts found, new and still open.

    ``existing`` lists the open conflicts (unresolved, investigating, escalated) of the
    requested types and tasks that were stored before this run, re-detections included.
    criticalCount and highCount count both lists. A Redis outage skips the Redis-based
    methods, an unreadable file root the file-based one (listed in ``skipped``); a failed
    Postgres query is E1640. ``progress(done, total)`` hears of each method run and of
    the storing after them (a run over every task of a large server takes seconds).
    """
    types = check_types(conflict_types)
    if task_ids is not None:
        task_ids = [files.check_safe_id(t) for t in dict.fromkeys(task_ids)]
    scope = Scope(task_ids, project_ids)
    candidates: list[Candidate] = []
    skipped: list[dict[str, str]] = []
    checked: set[str] = set()
    try:
        # Read before the methods run: a conflict stored meanwhile (a file claim) is not
        # judged by candidates computed before it existed.
        methods = [t for t in types if t in DETECTORS]
        before = _open_before(scope, methods)
        for done, conflict_type in enumerate(methods, 1):
            try:
                candidates += DETECTORS[conflict_type](scope)
            except redis_store.RedisUnavailable as exc:
                skipped.append({"conflictType": conflict_type, "reason": f"redis: {exc}"})
            except OSError as exc:  # an unreadable CONTEXT_DIR skips the file backup check
                skipped.append({"conflictType": conflict_type, "reason": f"files: {exc}"})
            else:
                if conflict_type != "data_inconsistency" or settings.ENABLE_FILE_SYNC:
                    checked.add(conflict_type)  # it looked, so what it missed is gone
            if progress:
                progress(done, len(methods) + 1)
        created = store_candidates(candidates, detected_by=detected_by)
        closed = close_stale([c for c in before if c.conflict_type in checked], candidates,
                             every_task=scope.task_ids is None)
        existing = _existing(scope, types, exclude=[c.pk for c in created])
        if progress:
            progress(len(methods) + 1, len(methods) + 1)
    except DatabaseError as exc:
        logger.exception("conflict detection failed")
        raise OrchestratorError("E1640", "Conflict detection query failed",
                                {"reason": failure_reason(exc)}) from exc
    detected = [representation.detected_item(c) for c in created]
    known = [representation.existing_item(c) for c in existing]
    listed = [*detected, *known]
    result: dict[str, Any] = {
        "detected": detected,
        "existing": known,
        "summary": {
            "newConflicts": len(detected),
            "existingConflicts": len(existing),
            "criticalCount": sum(1 for c in listed if c["severity"] == "critical"),
            "highCount": sum(1 for c in listed if c["severity"] == "high"),
        },
        "timestamp": now_iso(),
    }
    if skipped:
        result["skipped"] = skipped
    if closed:
        result["closed"] = auto_close.listed(closed)
    return result


def _in_scope(query, scope: Scope):
    if scope.project_ids is not None:
        query = query.filter(project_id__in=scope.project_ids)
    if scope.task_ids is not None:
        query = query.filter(Q(task_a_id__in=scope.task_ids) | Q(task_b_id__in=scope.task_ids))
    return query


def _open_before(scope: Scope, types: list[str]) -> list[ContextConflict]:
    """The open conflicts of ``types`` a run over ``scope`` re-checks (not reported ones)."""
    if not types:
        return []
    query = ContextConflict.objects.filter(resolution_status__in=OPEN_STATUSES,
                                           conflict_type__in=types)
    return list(_in_scope(query, scope).exclude(detected_by__in=auto_close.REPORTED_BY).only(
        "id", "project_id", "task_a_id", "task_b_id", "conflict_type", "evidence"))


def _paths(conflict: ContextConflict | Candidate) -> frozenset[str] | None:
    """The shared paths a file_conflict names (evidence.actualValue), None if it names none."""
    evidence = conflict.evidence if isinstance(conflict.evidence, dict) else {}
    value = evidence.get("actualValue")
    if not isinstance(value, list) or not value:
        return None
    return frozenset(str(path) for path in value)


def _fields(conflict: ContextConflict | Candidate) -> set[str]:
    evidence = conflict.evidence if isinstance(conflict.evidence, dict) else {}
    return {f for f in str(evidence.get("field") or "").split(",") if f}


def close_stale(before: list[ContextConflict], candidates: list[Candidate], *,
                every_task: bool) -> list[dict[str, Any]]:
    """Close the conflicts of ``before`` (open, of types whose method just ran over them)
    whose evidence this run's ``candidates`` no longer show; the rows closed.

    file_conflict: gone when the pair shares none of its paths (a completed, archived or
    deleted task shares nothing); when the pair's overlap changed but still meets them, it
    is superseded by the stored conflict naming the current overlap, if there is one.
    lock_collision: gone unless the same expired lock is still there. state_mismatch and
    data_inconsistency: gone unless one of its fields still differs. version_divergence:
    gone unless found again. ``every_task``: the run looked at every active task, so a
    task no longer active is why a per-task conflict was not found again.
    """
    if not before:
        return []
    shared: dict[tuple[Any, ...], frozenset[str]] = {}
    seen: dict[tuple[Any, ...], Any] = {}
    for c in candidates:
        key = (c.conflict_type, c.project_id, c.task_a_id, c.task_b_id)
        if c.conflict_type == "file_conflict":
            shared[key] = _paths(c) or frozenset()
        elif c.conflict_type == "lock_collision":
            seen[key] = _normal(c.evidence.get("actualValue"))
        else:
            seen[key] = _fields(c)
    gone: list[ContextConflict] = []
    shifted: list[tuple[ContextConflict, frozenset[str]]] = []
    for conflict in before:
        key = (conflict.conflict_type, conflict.project_id, conflict.task_a_id,
               conflict.task_b_id)
        evidence = conflict.evidence if isinstance(conflict.evidence, dict) else {}
        if conflict.conflict_type == "file_conflict":
            paths = _paths(conflict)
            if paths is None:
                continue  # nothing to re-check
            now = shared.get(key, frozenset())
            if not paths & now:
                gone.append(conflict)
            elif paths != now:
                shifted.append((conflict, now))
        elif conflict.conflict_type == "lock_collision":
            if seen.get(key) != _normal(evidence.get("actualValue")):
                gone.append(conflict)
        elif key not in seen or not (seen[key] & (_fields(conflict) or seen[key])):
            gone.append(conflict)
    closures = _gone(gone, every_task) + _superseded(shifted)
    closed = auto_close.close(closures)
    auto_close.report(closed)
    return closed


def _gone(conflicts: list[ContextConflict], every_task: bool) -> list[auto_close.Closure]:
    """An ``auto: evidence gone`` closure per conflict, with the reason in words."""
    if not conflicts:
        return []
    status = dict(TaskContext.objects.filter(
        task_id__in={t for c in conflicts for t in (c.task_a_id, c.task_b_id) if t})
        .values_list("task_id", "status"))
    closures = []
    for c in conflicts:
        evidence = c.evidence if isinstance(c.evidence, dict) else {}
        reason = None
        for task_id in (c.task_a_id, c.task_b_id):
            if not task_id:
                continue
            if task_id not in status:
                reason = f"task {task_id} no longer exists"
            elif (status[task_id] not in ACTIVE_STATUSES and c.conflict_type != "lock_collision"
                  and (every_task or c.conflict_type == "file_conflict")):
                reason = f"task {task_id} is {status[task_id]}"
            if reason:
                break
        if reason is None:
            fields = ", ".join(sorted(_fields(c)))
            reason = {
                "file_conflict": f"tasks {c.task_a_id} and {c.task_b_id} no longer share "
                                 f"{', '.join(sorted(_paths(c) or []))}",
                "lock_collision": f"the expired lock of session "
                                  f"{(evidence.get('actualValue') or {}).get('sessionId')} "
                                  "is no longer in Redis as seen (released, renewed or taken "
                                  "over)" if isinstance(evidence.get("actualValue"), dict)
                                  else "the expired lock seen is no longer in Redis",
                "state_mismatch": f"the Redis cache agrees with Postgres on {fields} again",
                "data_inconsistency": f"the file backup agrees with Postgres on {fields} "
                                      "again",
                "version_divergence": f"task {c.task_a_id} no longer has more than one "
                                      "recovery version",
            }.get(c.conflict_type, "not found again")
        closures.append(auto_close.Closure(str(c.pk), auto_close.EVIDENCE_GONE, reason))
    return closures


def _superseded(shifted: list[tuple[ContextConflict, frozenset[str]]]
                ) -> list[auto_close.Closure]:
    """file_conflicts whose pair now shares other paths than they name (some of them still):
    superseded by the stored conflict naming the pair's current overlap (open, or ignored
    by a person), when there is one; otherwise they stay open."""
    if not shifted:
        return []
    olds = [c for c, _ in shifted]
    stored = ContextConflict.objects.filter(
        conflict_type="file_conflict", resolution_status__in=KNOWN_STATUSES,
        project_id__in={c.project_id for c in olds}, task_a_id__in={c.task_a_id for c in olds},
        task_b_id__in={c.task_b_id for c in olds}).only(
        "id", "project_id", "task_a_id", "task_b_id", "evidence").order_by("-detected_at")
    current: dict[tuple[Any, ...], Any] = {}
    for row in stored:
        paths = _paths(row)
        if paths is not None:
            current.setdefault((row.project_id, row.task_a_id, row.task_b_id, paths), row.pk)
    closures = []
    for old, now in shifted:
        newer = current.get((old.project_id, old.task_a_id, old.task_b_id, now))
        if newer is not None and newer != old.pk:
            closures.append(auto_close.Closure(
                str(old.pk), auto_close.SUPERSEDED, superseded_by=str(newer),
                reason=f"tasks {old.task_a_id} and {old.task_b_id} now share "
                       f"{', '.join(sorted(now))}"))
    return closures


def _existing(scope: Scope, types: list[str], exclude: list[Any]) -> list[ContextConflict]:
    query = ContextConflict.objects.filter(resolution_status__in=OPEN_STATUSES,
                                           conflict_type__in=types)
    if scope.project_ids is not None:
        query = query.filter(project_id__in=scope.project_ids)
    if scope.task_ids is not None:
        query = query.filter(Q(task_a_id__in=scope.task_ids) | Q(task_b_id__in=scope.task_ids))
    # Only what existing_item shows: skipping evidence (jsonb) halves loading thousands.
    # The just-created rows are left out here rather than in SQL: NOT IN over the ids of a
    # large detection would pass one bind parameter each (Postgres stops at 65,535).
    skip = set(exclude)
    return [c for c in query.order_by("-detected_at").only(
        "id", "task_a_id", "task_b_id", "conflict_type", "severity", "description",
        "detected_at", "resolution_status") if c.pk not in skip]
