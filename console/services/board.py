"""The agent board and the "needs you" queue: the console's home page, computed from stored
state (Postgres, and Redis for task locks) on every poll, so every web worker answers the
same and a test can recompute it.

The board has one row per agent session worth seeing now: live, late, overdue, paused,
crashed, and ended or recovered within RECENT_ENDED. Its state is judged by the rule every
console page uses (``console.services.states``), not copied from the status column: a
paused session is "paused" (never live; its silence is not judged), a live one is late
from half the crash threshold on and overdue past it (the next sweep marks it crashed).

The queue lists what only a person can settle, oldest first (``since``): crashed sessions
waiting for recovery, unresolved conflicts, edits the block policy refused whose blocker
still holds the file, task locks that are expired or held by a session that is not
live (or while another live session is on the task), files two tasks hold, and paused
sessions past their reset. Every action on it is a tool call (``console.services.actions``).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce
from django.utils import timezone

from claims.models import FileClaim
from claims.services.queries import file_claims
from conflicts.models import ContextConflict
from conflicts.services import console as conflict_console
from console.services.states import LATE_SHARE, crash_threshold_seconds, session_state
from contexts.models import TaskContext
from foundation.backends import redis_store
from foundation.core.errors import session_not_found
from foundation.core.stamps import iso
from locks import services as locks
from sessions.models import ActiveSession, SessionDetail, SessionEvent, ToolInvocation
from sessions.services import recovery
from sessions.services.common import CLOSED_STATUSES, LIVE_STATUSES
from sessions.services.prompts import resume_prompt

# Ended sessions stay on the board this long after their end.
RECENT_ENDED = timedelta(hours=2)
# Rows at most (the newest first); the counts say when more were left off.
MAX_ROWS = 300
# Blocked edits older than this are history, not a queue item (the overview's window).
BLOCKED_WINDOW = timedelta(hours=24)
SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3}
STATES = ("live", "late", "overdue", "paused", "crashed", "ended", "recovered")
# The agent's kind (claude-code, codex, ...) when the session records it: the first of
# these SessionDetail fields that exists; otherwise the board shows the agent id alone.
KIND_FIELDS = ("agent_kind", "agent_type", "client_kind")


def _of(queryset: QuerySet, project_ids: list[str] | None) -> QuerySet:
    return queryset if project_ids is None else queryset.filter(project_id__in=project_ids)


def _kind_field() -> str | None:
    names = {f.name for f in SessionDetail._meta.get_fields()}
    return next((name for name in KIND_FIELDS if name in names), None)


def _duration(start: datetime | None, end: datetime | None) -> int | None:
    return int((end - start).total_seconds()) if start and end else None


# The heartbeat's colour on the board, from the judgement of console.services.states.
HEARTBEAT_LEVELS = {"fresh": "ok", "late": "late", "overdue": "overdue"}


def _judge(session: ActiveSession, detail: SessionDetail | None, now: datetime
           ) -> tuple[str, str, str]:
    """(state, its meaning in words, heartbeat level: ok | late | overdue | none), by the
    rule every console page judges a session by (``console.services.states``); the words
    add what the board knows besides (a pause's reason and reset, a crash's kind)."""
    judged = session_state(session.status, session.recovery_needed, session.last_heartbeat,
                           detail.paused_at if detail else None, now)
    words = judged.meaning[0].upper() + judged.meaning[1:]
    level = HEARTBEAT_LEVELS.get(judged.heartbeat, "none")
    if judged.state == "paused" and detail is not None:
        reason = (detail.pause_reason or "paused").replace("_", " ")
        resets = detail.pause_resets_at
        words = f"Paused ({reason}): expects no heartbeats and is never marked crashed"
        if resets is not None:
            words += ("; its reset has passed, it should be working again" if resets <= now
                      else "; resumes after its reset")
    elif judged.state == "crashed":
        if session.recovery_type not in (None, "crash"):
            words += f" ({session.recovery_type})"
        age = judged.heartbeat_age_seconds
        level = "overdue" if age is not None and age >= crash_threshold_seconds() else "none"
    elif session.recovery_needed and judged.state in ("live", "late", "overdue"):
        words += "; waits for recovery after a compaction"
    return judged.state, words, level


def _latest_files(session_ids: list[str]) -> dict[str, dict[str, Any]]:
    """The file each session touched last among its unreleased claims."""
    rows = (FileClaim.objects.filter(session_id__in=session_ids, released_at=None)
            .order_by("session_id", "-touched_at").distinct("session_id")
            .values("session_id", "path", "touched_at"))
    return {r["session_id"]: {"path": r["path"], "at": iso(r["touched_at"])} for r in rows}


def _latest_tools(session_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each session's last recorded tool call (tool history: its index reads it)."""
    rows = (ToolInvocation.objects.filter(session_id__in=session_ids)
            .order_by("session_id", "-id").distinct("session_id")
            .values("session_id", "tool", "summary", "timestamp", "success"))
    return {r["session_id"]: {"tool": r["tool"], "summary": r["summary"] or "",
                              "at": iso(r["timestamp"]), "ok": r["success"]} for r in rows}


def _task_names(task_ids: set[str]) -> dict[str, str]:
    return dict(TaskContext.objects.filter(task_id__in=[t for t in task_ids if t])
                .values_list("task_id", "name"))


def board_rows(now: datetime, project_ids: list[str] | None) -> tuple[list[dict], bool]:
    """The board's rows, newest start first, and whether MAX_ROWS cut some off."""
    # A recovered session has no end time of its own: its last heartbeat stands for it.
    shown = Q(status__in=LIVE_STATUSES) | Q(status="crashed") | Q(recovery_needed=True) | Q(
        status__in=CLOSED_STATUSES, closed_at__gte=now - RECENT_ENDED)
    sessions = list(_of(ActiveSession.objects.annotate(
        closed_at=Coalesce("ended_at", "last_heartbeat")).filter(shown), project_ids)
                    .order_by("-started_at")[:MAX_ROWS + 1])
    cut = len(sessions) > MAX_ROWS
    sessions = sessions[:MAX_ROWS]
    ids = [s.session_id for s in sessions]
    details = {d.session_id: d for d in SessionDetail.objects.filter(session_id__in=ids)}
    files, tools = _latest_files(ids), _latest_tools(ids)
    names = _task_names({s.task_id for s in sessions if s.task_id})
    kind_field = _kind_field()
    rows = []
    for s in sessions:
        detail = details.get(s.session_id)
        state, words, level = _judge(s, detail, now)
        age = int((now - s.last_heartbeat).total_seconds()) if s.last_heartbeat else None
        end = s.closed_at if state in ("ended", "recovered", "crashed") else now
        rows.append({
            "pk": str(s.pk), "sessionId": s.session_id, "projectId": s.project_id,
            "agentId": detail.agent_id if detail else None,
            "agentKind": getattr(detail, kind_field, None) if detail and kind_field else None,
            "taskId": s.task_id, "taskName": names.get(s.task_id or ""),
            "state": state, "stateText": words, "status": s.status,
            "heartbeatLevel": level, "heartbeatAgeSeconds": age,
            "lastHeartbeat": iso(s.last_heartbeat), "startedAt": iso(s.started_at),
            "endedAt": iso(s.closed_at) if state in ("ended", "recovered") else None,
            "durationSeconds": _duration(s.started_at, end),
            "pausedAt": iso(detail.paused_at) if detail and detail.paused_at else None,
            "resetsAt": iso(detail.pause_resets_at) if detail and detail.pause_resets_at
            else None,
            "file": files.get(s.session_id), "tool": tools.get(s.session_id),
        })
    return rows, cut


def crashed_session_prompt(session_id: str) -> str:
    """The resume prompt of a session waiting for recovery (the queue's copy button reads
    it when clicked: composing one per crashed session on every poll would cost more than
    the rest of the board). E1600 when no such session waits for recovery."""
    session = ActiveSession.objects.filter(session_id=session_id, recovery_needed=True).first()
    if session is None:
        raise session_not_found(session_id)
    return resume_prompt(recovery.recovery_state(session_id))


# -- the queue -------------------------------------------------------------------------------

def _session_words(session_id: str, agents: dict[str, str | None], task: str | None,
                   names: dict[str, str]) -> str:
    agent = agents.get(session_id)
    task_text = names.get(task or "", task) if task else "no task"
    return f"{agent or 'agent'} on {task_text}"


def _recovery_items(project_ids: list[str] | None) -> list[dict[str, Any]]:
    rows = list(_of(ActiveSession.objects.filter(recovery_needed=True), project_ids))
    agents = dict(SessionDetail.objects.filter(session_id__in=[s.session_id for s in rows])
                  .values_list("session_id", "agent_id"))
    names = _task_names({s.task_id for s in rows if s.task_id})
    items = []
    for s in rows:
        items.append({
            "key": f"crashed:{s.pk}", "kind": "crashed", "projectId": s.project_id,
            "since": iso(s.last_heartbeat or s.started_at),
            "title": f"Crashed: {_session_words(s.session_id, agents, s.task_id, names)}",
            "detail": f"Stopped without ending ({s.recovery_type or 'crash'}). Give its "
                      "resume prompt to a new session, then mark it recovered.",
            "sessionId": s.session_id, "sessionPk": str(s.pk), "taskId": s.task_id,
            "actions": [{"action": "copy_prompt", "label": "Copy resume prompt"},
                        {"action": "mark_recovered", "label": "Mark recovered",
                         "confirm": "Mark this crash dealt with? It leaves the queue."}],
        })
    return items


def _conflict_items(project_ids: list[str] | None) -> list[dict[str, Any]]:
    rows = list(_of(ContextConflict.objects.filter(resolution_status="unresolved"),
                    project_ids))
    tasks = conflict_console.tasks_of(rows)  # one query for every conflict's two sides
    names = {task_id: task.name for task_id, task in tasks.items()}
    items = []
    for c in rows:
        sides = conflict_console.sides(c, tasks)
        a_name, b_name = names.get(c.task_a_id, c.task_a_id), names.get(c.task_b_id or "",
                                                                        c.task_b_id)
        # A side is its task (by name) unless the type's sides are stores (Postgres, cache).
        a_label, b_label = conflict_console.SIDE_LABELS.get(c.conflict_type,
                                                            (a_name, b_name or "B"))
        actions = [
            {"action": "use_a", "label": f"Use A: {a_label}",
             "confirm": f"Keep side A ({a_label}) and apply it?"},
            {"action": "use_b", "label": f"Use B: {b_label}",
             "confirm": f"Keep side B ({b_label}) and apply it?"},
            {"action": "merge", "label": "Merge…", "value": conflict_console
             .resolved_value_template(c, tasks)},
            {"action": "ignore", "label": "Dismiss",
             "confirm": "Dismiss this conflict (resolved as ignored)?"},
        ]
        items.append({
            "key": f"conflict:{c.pk}", "kind": "conflict", "projectId": c.project_id,
            "since": iso(c.detected_at), "severity": c.severity,
            "severityRank": SEVERITY_RANK.get(c.severity, 9),
            "title": f"{c.severity.capitalize()} {c.conflict_type.replace('_', ' ')}: "
                     f"{a_name}{' / ' + b_name if b_name else ''}",
            "detail": c.description[:300], "conflictId": str(c.pk),
            "a": sides["a"]["value"][:300], "b": sides["b"]["value"][:300],
            "aLabel": a_label, "bLabel": b_label,
            "field": sides["field"], "actions": actions,
        })
    return items


def _blocked_items(now: datetime, project_ids: list[str] | None) -> list[dict[str, Any]]:
    """Each (refused session, path) still blocked: the refused session is live and a holder
    of the refusal still holds the path. The newest refusal of a pair speaks for it."""
    events = (SessionEvent.objects.filter(event_type="system_event", content="edit_blocked",
                                          created_at__gte=now - BLOCKED_WINDOW)
              .order_by("-created_at").values("session_id", "parts", "created_at"))
    refused = {s.session_id: s for s in ActiveSession.objects.filter(
        session_id__in={e["session_id"] for e in events}, status__in=LIVE_STATUSES)}
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for event in events:
        session = refused.get(event["session_id"])
        parts = event["parts"] if isinstance(event["parts"], dict) else {}
        if session is None or (project_ids is not None and session.project_id
                               not in project_ids):
            continue
        for holder in parts.get("holders") or []:
            key = (session.session_id, holder.get("path") or "")
            if key not in pairs:
                pairs[key] = {"event": event, "session": session, "holder": holder}
    if not pairs:
        return []
    paths = sorted({path for _, path in pairs})
    held = {(c["sessionId"], c["path"]) for c in
            file_claims(project_ids, paths=paths, include_recent=False)["claims"]}
    names = _task_names({p["session"].task_id for p in pairs.values()})
    agents = dict(SessionDetail.objects.filter(session_id__in=[s for s, _ in pairs])
                  .values_list("session_id", "agent_id"))
    items = []
    for (session_id, path), found in pairs.items():
        holder = found["holder"]
        if (holder.get("sessionId"), path) not in held:
            continue  # the blocker let go: the next edit goes through
        session = found["session"]
        who = holder.get("agentId") or "another agent"
        items.append({
            "key": f"blocked:{session_id}:{path}", "kind": "blocked",
            "projectId": session.project_id, "since": iso(found["event"]["created_at"]),
            "title": f"Edit blocked: {_session_words(session_id, agents, session.task_id, names)}"
                     f" may not edit {path}",
            "detail": f"{who} holds it for {holder.get('taskName') or holder.get('taskId')}"
                      " (the project's file policy is block)",
            "path": path, "sessionId": session_id, "holderSessionId": holder.get("sessionId"),
            "actions": [{"action": "release_claim", "label": f"Release {who}'s claim",
                         "confirm": f"Take {path} from {who}? Its next edit claims it again."}],
        })
    return items


def _lock_items(now: datetime, project_ids: list[str] | None) -> tuple[list[dict], bool]:
    """Task locks a person should release: expired, held by a session that is not live, or
    held while another live session works on the task. (items, Redis was readable)."""
    try:
        found = list(locks.scan_locks())
    except redis_store.RedisUnavailable:
        return [], False
    tasks = {t.task_id: t for t in _of(TaskContext.objects.filter(
        task_id__in=[lock.get("taskId") for lock in found]), project_ids)}
    holders = {s.session_id: s for s in ActiveSession.objects.filter(
        session_id__in=[lock.get("sessionId") for lock in found])}
    others: dict[str | None, list[str]] = {}
    for s in ActiveSession.objects.filter(task_id__in=list(tasks), status__in=LIVE_STATUSES):
        others.setdefault(s.task_id, []).append(s.session_id)
    items = []
    for lock in found:
        task = tasks.get(lock.get("taskId"))
        if task is None:
            continue
        holder_id = str(lock.get("sessionId") or "")
        holder = holders.get(holder_id)
        waiting = [s for s in others.get(task.task_id, []) if s != holder_id]
        if locks.is_expired(lock, now):
            why = "expired: it protects nothing, but its key is still there"
        elif holder is None or holder.status not in LIVE_STATUSES:
            why = (f"held by a session that is {holder.status if holder else 'gone'}: "
                   "nobody will renew or release it")
        elif waiting:
            why = f"contested: {len(waiting)} other live session(s) work on this task"
        else:
            continue
        items.append({
            "key": f"lock:{task.task_id}", "kind": "lock", "projectId": task.project_id,
            "since": lock.get("lockedAt") or iso(now),
            "title": f"Task lock on {task.name}", "detail": f"The lock is {why}",
            "taskId": task.task_id, "taskPk": str(task.pk), "sessionId": holder_id,
            "actions": [{"action": "release_lock", "label": "Release the lock",
                         "confirm": f"Release the lock on {task.name}?"}],
        })
    return items, True


def _contested_items(project_ids: list[str] | None) -> list[dict[str, Any]]:
    """Files two tasks hold now: a person decides who keeps editing."""
    listed = file_claims(project_ids, include_recent=False)
    by_file: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for claim in listed["claims"]:
        if claim["contested"]:
            by_file.setdefault((claim["projectId"], claim["path"]), []).append(claim)
    items = []
    for (project_id, path), claims in sorted(by_file.items()):
        holders = [c for c in claims if c["state"] == "held"]
        items.append({
            "key": f"contested:{project_id}:{path}", "kind": "contested",
            "projectId": project_id, "since": min(c["claimedAt"] for c in holders),
            "title": f"Contested file {path}",
            "detail": "Held by " + ", ".join(
                f"{c['agentId'] or 'an agent'} ({c['taskName'] or c['taskId']})"
                for c in holders),
            "path": path,
            "actions": [{"action": "release_claim", "sessionId": c["sessionId"],
                         "label": f"Release {c['agentId'] or c['sessionId'][:8]}'s claim",
                         "confirm": f"Take {path} from {c['agentId'] or 'that agent'}?"}
                        for c in holders],
        })
    return items


def _paused_items(now: datetime, project_ids: list[str] | None) -> list[dict[str, Any]]:
    details = {d.session_id: d for d in SessionDetail.objects.filter(
        paused_at__isnull=False, pause_resets_at__lte=now)}
    rows = list(_of(ActiveSession.objects.filter(session_id__in=list(details),
                                                 status__in=LIVE_STATUSES), project_ids))
    names = _task_names({s.task_id for s in rows if s.task_id})
    agents = {k: d.agent_id for k, d in details.items()}
    return [{
        "key": f"paused:{s.pk}", "kind": "paused", "projectId": s.project_id,
        "since": iso(details[s.session_id].pause_resets_at),
        "title": f"Paused past its reset: {_session_words(s.session_id, agents, s.task_id, names)}",
        "detail": f"paused for {(details[s.session_id].pause_reason or '').replace('_', ' ')}"
                  "; its limit has reset",
        "sessionId": s.session_id, "sessionPk": str(s.pk),
        "actions": [{"action": "resume", "label": "Resume it",
                     "confirm": "End this session's pause now?"}],
    } for s in rows]


def needs_you(now: datetime, project_ids: list[str] | None) -> dict[str, Any]:
    """The queue, oldest first (a conflict's severity breaks ties)."""
    lock_items, redis_ok = _lock_items(now, project_ids)
    items = (_recovery_items(project_ids) + _conflict_items(project_ids)
             + _blocked_items(now, project_ids) + lock_items + _contested_items(project_ids)
             + _paused_items(now, project_ids))
    items.sort(key=lambda i: (i["since"] or "", i.get("severityRank", 9), i["key"]))
    counts = {kind: 0 for kind in ("crashed", "conflict", "blocked", "lock", "contested",
                                   "paused")}
    for item in items:
        counts[item["kind"]] += 1
    return {"items": items, "counts": counts, "locksReadable": redis_ok}


def board(project_ids: list[str] | None = None) -> dict[str, Any]:
    """Everything the home page shows; the JSON the page polls."""
    now = timezone.now()
    rows, cut = board_rows(now, project_ids)
    queue = needs_you(now, project_ids)
    counts = {state: sum(1 for r in rows if r["state"] == state) for state in STATES}
    return {
        "generatedAt": iso(now), "projectIds": project_ids,
        "crashThresholdSeconds": crash_threshold_seconds(), "lateShare": LATE_SHARE,
        "recentEndedSeconds": int(RECENT_ENDED.total_seconds()),
        "rows": rows, "rowsCut": cut, "counts": counts, "total": len(rows),
        "queue": queue["items"], "queueCounts": queue["counts"],
        "locksReadable": queue["locksReadable"], "needsYouCount": len(queue["items"]),
    }
