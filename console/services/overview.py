"""The fleet overview: everything an operator needs at a glance, computed from stored state.

Every figure is a query on Postgres (or Redis's own INFO counters), never a per-process
counter, so each web worker answers the same and a test can recompute it. The page and
its JSON feed both call ``fleet_overview``.

``project_ids`` narrows every figure about the work (sessions, recovery, conflicts,
orphaned tasks, activity, file claims) to those projects (None: every project); the
periodic jobs and the cache serve the whole server and are always global.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from claims.services.queries import file_claims, live_claim_counts
from conflicts.models import ContextConflict
from console.services.states import session_state
from contexts.models import TaskContext
from contexts.services import storage
from foundation.backends import redis_store
from foundation.core import jobruns
from foundation.core.db import qualified
from foundation.core.stamps import iso
from sessions.models import ActiveSession, SessionDetail, SessionEvent, ToolInvocation
from sessions.services.work import orphaned_tasks as orphaned_task_rows

SEVERITIES = ("critical", "high", "medium", "low")
# Rows listed per table on the page; the counts above each table are always complete.
LISTED_ROWS = 50
ACTIVITY_MINUTES = 60
# Blocked edits (the block policy refused a claim) are counted over this many hours.
BLOCKED_HOURS = 24
# A job is stale when its last run started longer ago than this many beat periods.
STALE_PERIODS = 2


def _of(queryset: QuerySet, project_ids: list[str] | None) -> QuerySet:
    return queryset if project_ids is None else queryset.filter(project_id__in=project_ids)


def active_sessions(now: datetime, project_ids: list[str] | None = None
                    ) -> list[dict[str, Any]]:
    """Live sessions, oldest heartbeat first (the likeliest to be in trouble)."""
    sessions = list(_of(ActiveSession.objects.filter(status="active"), project_ids)
                    .order_by("last_heartbeat")[:LISTED_ROWS])
    details = {d[0]: d[1:] for d in SessionDetail.objects.filter(
        session_id__in=[s.session_id for s in sessions]).values_list(
        "session_id", "agent_id", "paused_at")}
    names = _task_names({s.task_id for s in sessions})
    rows = []
    for s in sessions:
        agent, paused_at = details.get(s.session_id, (None, None))
        # Judged as every console page judges a session: a paused one is "paused", not
        # live, and a heartbeat is fresh, late or overdue against the crash threshold.
        judged = session_state(s.status, s.recovery_needed, s.last_heartbeat, paused_at, now)
        rows.append({
            "pk": str(s.pk), "sessionId": s.session_id, "projectId": s.project_id,
            "agentId": agent, "taskId": s.task_id, "taskName": names.get(s.task_id),
            "lastHeartbeat": iso(s.last_heartbeat),
            "heartbeatAgeSeconds": judged.heartbeat_age_seconds,
            "state": judged.state, "heartbeat": judged.heartbeat,
            "paused": paused_at is not None})
    return rows


def _task_names(task_ids: set[str | None]) -> dict[str, str]:
    return dict(TaskContext.objects.filter(task_id__in=[t for t in task_ids if t])
                .values_list("task_id", "name"))


def sessions_needing_recovery(project_ids: list[str] | None = None) -> list[dict[str, Any]]:
    rows = list(_of(ActiveSession.objects.filter(recovery_needed=True), project_ids).order_by(
        "-last_heartbeat")[:LISTED_ROWS])
    names = _task_names({s.task_id for s in rows})
    agents = dict(SessionDetail.objects.filter(session_id__in=[s.session_id for s in rows])
                  .values_list("session_id", "agent_id"))
    return [{"pk": str(s.pk), "sessionId": s.session_id, "projectId": s.project_id,
             "taskId": s.task_id, "taskName": names.get(s.task_id),
             "agentId": agents.get(s.session_id),
             "status": s.status, "recoveryType": s.recovery_type,
             "lastHeartbeat": iso(s.last_heartbeat)} for s in rows]


def conflict_counts(project_ids: list[str] | None = None) -> dict[str, Any]:
    """Unresolved conflicts by severity, plus escalated ones (they also wait for a human)."""
    counts = _of(ContextConflict.objects.all(), project_ids).aggregate(
        **{severity: Count("pk", filter=Q(resolution_status="unresolved", severity=severity))
           for severity in SEVERITIES},
        escalated=Count("pk", filter=Q(resolution_status="escalated")))
    return {"unresolved": {s: counts[s] for s in SEVERITIES},
            "unresolvedTotal": sum(counts[s] for s in SEVERITIES),
            "escalated": counts["escalated"]}


def orphaned_tasks(project_ids: list[str] | None = None) -> tuple[list[dict[str, Any]], int]:
    """Orphaned work (docs/user-guide/agent-calls.md; the query check_recovery, the task list and
    get_task_graph use too): unfinished tasks a crashed session worked on and no live
    session works on, newest crash first: (the first LISTED_ROWS of them, how many there
    are)."""
    rows = orphaned_task_rows(project_ids=project_ids)
    return [{"pk": str(o.task_pk), "taskId": o.task_id, "projectId": o.project_id,
             "name": o.name, "crashedSessionId": o.session_id,
             "lastActivity": iso(o.last_heartbeat)} for o in rows[:LISTED_ROWS]], len(rows)


def _per_minute(sql: str, since: datetime, project_ids: list[str] | None
                ) -> dict[datetime, int]:
    with connection.cursor() as cursor:
        cursor.execute(sql, {"since": since, "projects": project_ids})
        return dict(cursor.fetchall())


def activity(now: datetime, project_ids: list[str] | None = None) -> dict[str, Any]:
    """Saves (new task versions) and session tool calls per minute over the last hour; a
    tool call counts for the project of the session that made it."""
    first = now.replace(second=0, microsecond=0) - timedelta(minutes=ACTIVITY_MINUTES - 1)
    saves = _per_minute(
        f"SELECT date_trunc('minute', created_at), count(*) FROM {qualified('context_versions')} "
        "WHERE created_at >= %(since)s AND (%(projects)s::text[] IS NULL "
        "OR project_id = ANY(%(projects)s::text[])) GROUP BY 1", first, project_ids)
    calls = _per_minute(
        f"SELECT date_trunc('minute', timestamp), count(*) FROM "
        f"{ToolInvocation._meta.db_table} WHERE timestamp >= %(since)s "
        "AND (%(projects)s::text[] IS NULL OR session_id IN (SELECT session_id FROM "
        f"{qualified('active_sessions')} WHERE project_id = ANY(%(projects)s::text[]))) "
        "GROUP BY 1", first, project_ids)
    minutes = [first + timedelta(minutes=i) for i in range(ACTIVITY_MINUTES)]
    return {
        "minutes": [{"minute": iso(m), "saves": saves.get(m, 0), "toolCalls": calls.get(m, 0)}
                    for m in minutes],
        "savesLastHour": sum(saves.values()),
        "toolCallsLastHour": sum(calls.values()),
    }


BLOCKED_SQL = """
SELECT count(*) FROM {events} e
WHERE e.event_type = 'system_event' AND e.content = 'edit_blocked'
  AND e.created_at >= %(since)s
  AND (%(projects)s::text[] IS NULL OR e.session_id IN (
       SELECT session_id FROM {sessions} WHERE project_id = ANY(%(projects)s::text[])))
"""


def blocked_edits(now: datetime, project_ids: list[str] | None = None) -> int:
    """Edits the block policy refused in the last BLOCKED_HOURS (each an ``edit_blocked``
    event in the refused session's log); an edit counts for its session's project."""
    with connection.cursor() as cursor:
        cursor.execute(BLOCKED_SQL.format(events=SessionEvent._meta.db_table,
                                          sessions=qualified("active_sessions")),
                       {"since": now - timedelta(hours=BLOCKED_HOURS),
                        "projects": project_ids})
        return cursor.fetchone()[0]


def contested_files(project_ids: list[str] | None = None) -> list[dict[str, Any]]:
    """Paths that more than one task claims: contested now (every one of those tasks holds
    it: a live conflict) first, then overlaps where a claim lapsed lately; newest edit first
    within each. Per path: its tasks, sessions, agents and the age of its last edit."""
    by_path: dict[str, list[dict[str, Any]]] = {}
    listed = file_claims(project_ids, include_recent=True)
    for claim in listed["claims"]:
        by_path.setdefault(claim["path"], []).append(claim)
    rows = []
    for path, claims in by_path.items():
        tasks = list(dict.fromkeys(c["taskId"] or c["sessionId"] for c in claims))
        if len(tasks) < 2:
            continue
        rows.append({
            "path": path, "live": path in listed["contested"],
            "tasks": [c for c in dict.fromkeys(c["taskId"] for c in claims) if c],
            "taskNames": [n for n in dict.fromkeys(c["taskName"] or c["taskId"]
                                                   for c in claims) if n],
            "sessions": list(dict.fromkeys(c["sessionId"] for c in claims)),
            "agents": [a for a in dict.fromkeys(c["agentId"] for c in claims) if a],
            "lastEditSecondsAgo": int(min(c["secondsSinceEdit"] for c in claims)),
        })
    rows.sort(key=lambda r: (not r["live"], r["lastEditSecondsAgo"], r["path"]))
    return rows[:LISTED_ROWS]


def file_claim_overview(now: datetime, project_ids: list[str] | None = None
                        ) -> dict[str, Any]:
    """Who is editing what now: live claims (held claims, files held, files contested by
    two tasks), edits blocked in the last BLOCKED_HOURS, and the contested files."""
    counts = live_claim_counts(project_ids)
    return {"heldClaims": counts["claims"], "filesHeld": counts["files"],
            "contestedFiles": counts["contested"],
            "blockedLast24h": blocked_edits(now, project_ids),
            "contested": contested_files(project_ids)}


# A project whose stored bytes reach this share of STORAGE_QUOTA_BYTES is flagged.
STORAGE_WARN_PERCENT = 80


def storage_overview(project_ids: list[str] | None = None) -> dict[str, Any]:
    """Bytes of task versions and checkpoints per project against the per-project limit
    (STORAGE_QUOTA_BYTES; limitBytes 0: none), fullest first (LISTED_ROWS of them); ``warn``
    when the fullest is at STORAGE_WARN_PERCENT or more."""
    figures = storage.overview(project_ids)
    figures["projects"] = figures["projects"][:LISTED_ROWS]
    figures["warn"] = bool(figures["fullest"] is not None
                           and figures["fullest"] >= STORAGE_WARN_PERCENT)
    return figures


def cache_stats() -> dict[str, Any]:
    """Redis's keyspace hit rate since the server started (shared by every worker)."""
    try:
        stats = redis_store.run(lambda r: r.info("stats"))
    except redis_store.RedisUnavailable as exc:
        return {"available": False, "error": str(exc)[:200]}
    hits, misses = int(stats.get("keyspace_hits", 0)), int(stats.get("keyspace_misses", 0))
    return {"available": True, "hits": hits, "misses": misses,
            "hitRate": round(hits / (hits + misses), 4) if hits + misses else None}


def job_status(now: datetime) -> list[dict[str, Any]]:
    """Each periodic job's last run; stale when older than STALE_PERIODS beat periods."""
    periods = jobruns.job_periods()
    runs = jobruns.latest_runs()
    jobs = []
    for name in jobruns.known_jobs():
        run, period = runs.get(name), periods.get(name)
        entry: dict[str, Any] = {"name": name, "periodSeconds": period, "state": "never run",
                                 "stale": False, "outcome": None, "summary": "",
                                 "startedAt": None, "finishedAt": None, "ageSeconds": None}
        if run is not None:
            age = (now - run["started_at"]).total_seconds()
            entry.update(startedAt=iso(run["started_at"]), finishedAt=iso(run["finished_at"]),
                         outcome=run["outcome"], summary=run["summary"], ageSeconds=int(age),
                         state=run["outcome"],
                         stale=period is not None and age > STALE_PERIODS * period)
        elif period is None:
            entry["state"] = "disabled"
        jobs.append(entry)
    return jobs


def fleet_overview(project_ids: list[str] | None = None) -> dict[str, Any]:
    """The overview of ``project_ids`` (None: of every project); jobs and cache are the
    server's."""
    now = timezone.now()
    sessions = _of(ActiveSession.objects.all(), project_ids).aggregate(
        active=Count("pk", filter=Q(status="active")),
        recovery=Count("pk", filter=Q(recovery_needed=True)))
    orphaned, orphaned_count = orphaned_tasks(project_ids)
    return {
        "generatedAt": iso(now),
        "projectIds": project_ids,
        "activeSessions": active_sessions(now, project_ids),
        "activeSessionCount": sessions["active"],
        "recovery": sessions_needing_recovery(project_ids),
        "recoveryCount": sessions["recovery"],
        "conflicts": conflict_counts(project_ids),
        "orphanedTasks": orphaned,
        "orphanedTaskCount": orphaned_count,
        "activity": activity(now, project_ids),
        "fileClaims": file_claim_overview(now, project_ids),
        "storage": storage_overview(project_ids),
        "cache": cache_stats(),
        "jobs": job_status(now),
    }

