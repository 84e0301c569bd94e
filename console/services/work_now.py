"""Who works on what now, for the console's pages (claims and locks, a task's live panel,
the projects page). Read-only: every figure is a query on the stored state, judged with
the one session-state rule (console.services.states).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from claims.services.queries import file_claims
from conflicts.models import ContextConflict
from console.services.states import LIVE_STATUSES, session_state
from contexts.models import ContextVersion, TaskContext
from contexts.services.relationships import unfinished_blockers
from foundation.backends import redis_store
from locks import services as locks
from sessions.models import ActiveSession, SessionDetail
from sessions.services.work import orphaned_task_ids

# Versions shown on a task's live panel (the full history is below it on the page).
LAST_VERSIONS = 5


def _moment(value: Any) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else value


def _sessions(session_ids: set[str]) -> dict[str, dict[str, Any]]:
    """pk, agent, state of each session (two queries for all of them)."""
    rows = ActiveSession.objects.filter(session_id__in=session_ids).values(
        "pk", "session_id", "status", "recovery_needed", "last_heartbeat", "task_id")
    details = {d["session_id"]: d for d in SessionDetail.objects.filter(
        session_id__in=session_ids).values("session_id", "agent_id", "paused_at")}
    now = timezone.now()
    found = {}
    for row in rows:
        detail = details.get(row["session_id"], {})
        found[row["session_id"]] = {
            **row, "agent": detail.get("agent_id"),
            "judged": session_state(row["status"], row["recovery_needed"],
                                    row["last_heartbeat"], detail.get("paused_at"), now)}
    return found


def _tasks(task_ids: set[str]) -> dict[str, dict[str, Any]]:
    return {t["task_id"]: t for t in TaskContext.objects.filter(task_id__in=task_ids).values(
        "pk", "task_id", "name", "status", "project_id")}


def claims_and_locks(project_ids: list[str] | None, *, path: str | None = None,
                     task_id: str | None = None, session_id: str | None = None
                     ) -> dict[str, Any]:
    """Every file claim (held, and lapsed lately while its session lives) and every task
    lock of ``project_ids``: who holds which file, since when, on which task. Contested
    files (held by two tasks) first. ``path``/``task_id``/``session_id`` narrow the claims
    to one file, one task's files (and the others' claims on them), one session's."""
    listed = file_claims(project_ids, paths=[path] if path else None,
                         task_id=task_id or None, session_id=session_id or None,
                         include_recent=True)
    claims = listed["claims"]
    lock_rows = []
    locks_unknown = False
    try:
        all_locks = list(locks.scan_locks())
    except redis_store.RedisUnavailable:
        all_locks, locks_unknown = [], True
    tasks = _tasks({c["taskId"] for c in claims if c["taskId"]}
                   | {str(lock.get("taskId")) for lock in all_locks})
    sessions = _sessions({c["sessionId"] for c in claims}
                         | {str(lock.get("sessionId")) for lock in all_locks})
    for claim in claims:
        claim["task"] = tasks.get(claim["taskId"])
        claim["session"] = sessions.get(claim["sessionId"])
        for key in ("claimedAt", "lastEditAt", "expiresAt"):
            claim[key] = _moment(claim[key])
    for lock in all_locks:
        task = tasks.get(str(lock.get("taskId")))
        if task is None or (project_ids is not None and task["project_id"] not in project_ids):
            continue
        if task_id and task["task_id"] != task_id:
            continue
        holder = str(lock.get("sessionId") or "")
        if session_id and holder != session_id:
            continue
        locked_at = lock.get("lockedAt")
        lock_rows.append({
            "task": task, "sessionId": holder, "session": sessions.get(holder),
            "lockedAt": locks.expires_at({"expiresAt": locked_at}) if locked_at else None,
            "expiresAt": locks.expires_at(lock), "held": not locks.is_expired(lock)})
    lock_rows.sort(key=lambda r: (not r["held"], r["task"]["task_id"]))
    contested_files = {(c["projectId"], c["path"]) for c in claims if c["contested"]}
    return {"claims": claims, "contested": listed["contested"],
            "contestedCount": len(contested_files),
            "files": len({(c["projectId"], c["path"]) for c in claims}),
            "locks": lock_rows, "locksUnknown": locks_unknown}


def task_live_panel(task: TaskContext) -> dict[str, Any]:
    """Who is on ``task`` now (its live, paused and late sessions, and crashed ones not yet
    recovered), the files they hold, whether it is ready or blocked (unfinished blockers),
    and its last versions with who saved them."""
    rows = list(ActiveSession.objects.filter(task_id=task.task_id).filter(
        Q(status__in=LIVE_STATUSES) | Q(recovery_needed=True)).order_by("-last_heartbeat")
        .values_list("session_id", flat=True))
    sessions = _sessions(set(rows))
    files: dict[str, list[dict[str, Any]]] = {}
    if rows:
        for claim in file_claims(None, include_recent=False, task_id=task.task_id)["claims"]:
            if claim["sessionId"] in sessions:
                files.setdefault(claim["sessionId"], []).append(claim)
    on_it = [{**sessions[s], "files": files.get(s, [])} for s in rows if s in sessions]
    blockers = unfinished_blockers(task.task_id)
    blocker_tasks = _tasks({b["taskId"] for b in blockers})
    versions = list(ContextVersion.objects.filter(task_id=task.task_id)
                    .order_by("-version")[:LAST_VERSIONS])
    savers = _sessions({v.session_id for v in versions if v.session_id})
    live = [s for s in on_it if s["judged"].state in ("live", "late", "overdue", "paused")]
    return {
        "sessions": on_it,
        "liveCount": len(live),
        "liveAgents": [s["agent"] or s["session_id"] for s in live],
        "ready": task.status not in ("completed", "archived") and not blockers,
        "blockers": [{**b, "pk": blocker_tasks.get(b["taskId"], {}).get("pk")}
                     for b in blockers],
        "versions": [{"version": v.version, "at": v.created_at, "type": v.change_type,
                      "summary": v.change_summary, "sessionId": v.session_id,
                      "session": savers.get(v.session_id)} for v in versions],
    }


def last_session_at(task: TaskContext) -> datetime | None:
    """When a session last worked on ``task``: the stored ``last_session_at`` (set when a
    session starts on it or switches to it) or the latest heartbeat of a session on it,
    whichever is later: while an agent is live the stored one may still be empty."""
    heartbeat = (ActiveSession.objects.filter(task_id=task.task_id)
                 .exclude(last_heartbeat=None).order_by("-last_heartbeat")
                 .values_list("last_heartbeat", flat=True).first())
    stored = task.last_session_at
    return max((m for m in (stored, heartbeat) if m is not None), default=None)


def project_counts(project_names: dict[str, str]) -> list[dict[str, Any]]:
    """Per project: tasks (unfinished of all), sessions by state, orphaned tasks,
    unresolved conflicts, held claims and locks."""
    ids = list(project_names)
    tasks = {r["project_id"]: r for r in TaskContext.objects.filter(project_id__in=ids)
             .values("project_id").annotate(
                 total=Count("pk"),
                 open=Count("pk", filter=~Q(status__in=("completed", "archived"))))}
    now = timezone.now()
    states: dict[str, dict[str, int]] = {}
    paused = set(SessionDetail.objects.exclude(paused_at=None)
                 .values_list("session_id", flat=True))
    for row in ActiveSession.objects.filter(project_id__in=ids).filter(
            Q(status__in=LIVE_STATUSES) | Q(recovery_needed=True)).values_list(
            "project_id", "session_id", "status", "recovery_needed", "last_heartbeat"):
        project, session, status, recovery, heartbeat = row
        state = session_state(status, recovery, heartbeat, now if session in paused else None,
                              now).state
        counts = states.setdefault(project, {})
        counts[state] = counts.get(state, 0) + 1
    orphaned: dict[str, int] = {}
    orphan_ids = orphaned_task_ids(project_ids=ids)
    for project_id in TaskContext.objects.filter(task_id__in=orphan_ids).values_list(
            "project_id", flat=True):
        orphaned[project_id] = orphaned.get(project_id, 0) + 1
    conflicts = dict(ContextConflict.objects.filter(
        project_id__in=ids, resolution_status="unresolved").values("project_id")
        .annotate(n=Count("pk")).values_list("project_id", "n"))
    claims: dict[str, int] = {}
    for claim in file_claims(ids, include_recent=False)["claims"]:
        claims[claim["projectId"]] = claims.get(claim["projectId"], 0) + 1
    result = []
    for project_id, name in project_names.items():
        counted = states.get(project_id, {})
        result.append({
            "projectId": project_id, "name": name,
            "tasks": tasks.get(project_id, {}).get("total", 0),
            "openTasks": tasks.get(project_id, {}).get("open", 0),
            "live": counted.get("live", 0) + counted.get("late", 0)
            + counted.get("overdue", 0),
            "paused": counted.get("paused", 0), "crashed": counted.get("crashed", 0),
            "orphaned": orphaned.get(project_id, 0),
            "conflicts": conflicts.get(project_id, 0), "claims": claims.get(project_id, 0)})
    return result
