"""start_session, heartbeat and end_session."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from django.conf import settings
from django.db import transaction

from contexts.services import learnings as project_learnings
from contexts.services.tasks import project_of_task
from foundation.core import prepared
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError, projects_differ, task_not_found
from foundation.core.projects import default_project, require_project
from foundation.core.stamps import iso
from foundation.core.tools.access import owner_upsert_sql
from foundation.observability import metrics
from sessions import signals
from sessions.models import ActiveSession, SessionHandoff
from sessions.services import agent_context, handoffs, markers, notifications, recovery
from sessions.services.common import (
    DETAIL_TABLE,
    LIVE_STATUSES,
    announce_end,
    logger,
    refuse_for_status,
    session_status,
    sessions_table,
    tasks_table,
)
from sessions.services.notices import NOTICES_TABLE
from sessions.services.work import UPSERT_WORK_SQL, WORK_TABLE, record_work


def new_session_id() -> str:
    # session-<ms>-<uuid4>, the format every client knows; uuid4 comes from the OS's
    # secure random source.
    return f"session-{int(time.time() * 1000)}-{uuid.uuid4()}"


def session_project(task_id: str | None, project_id: str | None) -> str:
    """The project a session belongs to: its task's (E1610 unknown task; E1607 when
    ``project_id`` names another), else ``project_id`` or the default project (E1605)."""
    if task_id is not None:
        owner = project_of_task(task_id)
        if owner is None:
            raise task_not_found(task_id)
        if project_id is not None and project_id != owner:
            raise projects_differ(f"Task {task_id!r} is not in project {project_id!r}",
                                  {task_id: owner})
        return owner
    return require_project(project_id or default_project())


# A session's start is one statement, one round trip (it was seven: BEGIN, four writes,
# COMMIT and the owner's upsert): the session row, its detail row, its work on the task
# (as record_work writes it), its owner, and the reading of the project's handoff note.
# The parts of one statement share a snapshot, so each takes the new session from
# ``started`` rather than from the table; when the id exists ``started`` is empty and
# nothing is written (E1601). Prepared: planning it costs more than running it.
_START_SQL = f"""
WITH started AS (
  INSERT INTO {sessions_table()} (session_id, project_id, task_id, project_dir, git_branch)
  VALUES (%(session)s, %(project)s, %(task)s, %(dir)s, %(branch)s)
  ON CONFLICT (session_id) DO NOTHING
  RETURNING session_id, project_id, task_id, started_at, last_heartbeat),
detail AS (
  INSERT INTO {DETAIL_TABLE} (session_id, agent_id, process_id, compaction_count,
                              event_count, scratchpad, created_at, agent_kind, workflow,
                              skill, metadata)
  SELECT session_id, %(agent)s, %(process)s, 0, 0, '{{}}', now(), %(kind)s, %(workflow)s,
         %(skill)s, %(metadata)s::jsonb FROM started
  ON CONFLICT (session_id) DO UPDATE
  SET agent_id = EXCLUDED.agent_id, process_id = EXCLUDED.process_id,
      agent_kind = EXCLUDED.agent_kind, workflow = EXCLUDED.workflow,
      skill = EXCLUDED.skill, metadata = EXCLUDED.metadata),
work AS (
  INSERT INTO {WORK_TABLE} (session_id, project_id, task_id, agent_id, started_at)
  SELECT s.session_id, s.project_id, s.task_id, %(agent)s, s.started_at FROM started s
  WHERE EXISTS (SELECT 1 FROM {tasks_table()} t
                WHERE t.task_id = s.task_id AND t.project_id = s.project_id)
  {UPSERT_WORK_SQL}),
owner AS ({owner_upsert_sql("started", "%(owner)s")}),
handoff AS ({handoffs.CONSUME_ACTIVE_SQL}
  AND %(consume)s AND EXISTS (SELECT 1 FROM started) RETURNING *)
SELECT s.started_at, s.last_heartbeat,
       {", ".join(f"h.{f.column} AS handoff_{f.column}" for f in handoffs.HANDOFF_FIELDS)}
FROM started s LEFT JOIN handoff h ON true
"""


def start_session(*, session_id: str | None = None, task_id: str | None = None,
                  project_id: str | None = None, project_dir: str | None = None,
                  git_branch: str | None = None, agent_id: str | None = None,
                  process_id: int | None = None, resolve_task: bool = False,
                  create_task: bool = False, previous_session_id: str | None = None,
                  context_budget_tokens: int | None = None,
                  crashed_session_ids: list[str] | None = None,
                  owner: str | None = None, agent_kind: str | None = None,
                  workflow: str | None = None, skill: str | None = None,
                  metadata: dict[str, Any] | None = None) -> dict[str, Any]:
    """Register a session in its project, hand it the project's handoff (or, for a
    resumed conversation, the note its previous session left) and tell it what needs
    recovery there. ``owner``: the name of the token that starts it (only that token may
    write the session), None for in-process callers. ``agent_kind``, ``workflow``,
    ``skill`` and ``metadata``: what kind of agent runs it and for what
    (get_active_session finds a live session by them)."""
    metadata_json = checked_metadata(metadata)
    session_id = session_id or new_session_id()
    task_source = "argument" if task_id else None
    if task_id is None and resolve_task:
        # resolve_task checks the project in its own round trip.
        project_id = project_id or default_project()
        task_id, task_source = agent_context.resolve_task(
            project_id, project_dir, git_branch, create=create_task, session_id=session_id)
    else:
        project_id = session_project(task_id, project_id)
    previous = previous_session_id and handoffs.handoff_of(project_id=project_id,
                                                           session_id=previous_session_id)
    start = (_START_SQL, {
        "session": session_id, "project": project_id, "task": task_id, "dir": project_dir,
        "branch": git_branch, "agent": agent_id, "process": process_id, "owner": owner,
        "consume": not previous, "kind": agent_kind, "workflow": workflow, "skill": skill,
        "metadata": metadata_json})
    # The reads the answer needs go in the same round trip, after the insert (each in a
    # round trip of its own, they cost a start two more): the recovery report's probe
    # when the report will read it (one for crashed sessions runs the full check
    # instead), which leaves this session out, and the task's context bundle.
    probe = (recovery.start_probe(project_id, session_id)
             if settings.ENABLE_AUTO_RECOVERY_CHECK and not crashed_session_ids else None)
    bundle_read = agent_context.bundle_read(task_id, context_budget_tokens)
    row, probed, bundled = _in_one_round_trip(start, probe, bundle_read)
    if row is None:
        raise OrchestratorError("E1601", f"Session {session_id!r} already exists",
                                {"sessionId": session_id})
    started_at = row["started_at"]
    handoff = previous or handoffs.handoff_from_columns(row, "handoff_")
    transaction.on_commit(lambda: signals.session_started.send(
        sender=ActiveSession, session_id=session_id, task_id=task_id, agent_id=agent_id,
        started_at=started_at))
    metrics.sessions_total.labels("active").inc()
    logger.info("Session started", extra={"sessionId": session_id, "taskId": task_id,
                                          "projectId": project_id, "projectDir": project_dir,
                                          "agentId": agent_id})
    alive = markers.mark_alive(session_id, task_id, project_id, project_dir,
                               row["last_heartbeat"], force_file=True)
    saved_to = {"database": True, **alive}
    if settings.ENABLE_FILE_SYNC:
        saved_to["file"] = markers.write_state_file(project_id, session_id, "start",
                                                    task_id=task_id) and saved_to["file"]
    result: dict[str, Any] = {
        "success": True,
        "sessionId": session_id,
        "status": "active",
        "startedAt": iso(started_at),
        "taskId": task_id,
        "taskSource": task_source,
        "projectId": project_id,
        "projectDir": project_dir,
        "gitBranch": git_branch,
        "agentId": agent_id,
        "agentKind": agent_kind,
        "workflow": workflow,
        "skill": skill,
        "metadata": metadata or {},
        "processId": process_id,
        "heartbeatIntervalMs": settings.HEARTBEAT_INTERVAL_MS,
        "handoff": handoffs.handoff_data(handoff),
        "savedTo": saved_to,
    }
    bundle = agent_context.bundle_or_none(
        task_id, context_budget_tokens,
        prefetched=None if bundle_read is None else (bundle_read, bundled))
    if bundle is not None:
        result["contextBundle"] = bundle
    if settings.ENABLE_AUTO_RECOVERY_CHECK:
        result["recovery"] = recovery.start_report(
            project_id, session_id, crashed_session_ids, probed=probed,
            marker_is_mine=settings.ENABLE_FILE_SYNC and alive["file"])
    else:
        recovery.report_crashed(crashed_session_ids or [])
    result["notificationStatus"] = notifications.notify(
        f"{project_id} session open - {agent_id or session_id}")
    return result


def _in_one_round_trip(*statements: tuple[str, dict[str, Any]] | None
                       ) -> list[dict[str, Any] | None]:
    """Each statement's first row (None for a statement that is None, which is not sent),
    the statements sent prepared, in order, in one round trip."""
    rows = iter(prepared.fetch_first_each([s for s in statements if s is not None]))
    return [None if statement is None else next(rows) for statement in statements]


# A session's metadata is a small object: bounded by its JSON size, which the
# input schema cannot say (it bounds the number of keys).
MAX_METADATA_BYTES = 4096


def checked_metadata(metadata: dict[str, Any] | None) -> str | None:
    """``metadata`` as the JSON stored, or None; E1612 when it is over MAX_METADATA_BYTES
    (nothing written)."""
    if metadata is None:
        return None
    text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
    size = len(text.encode())
    if size > MAX_METADATA_BYTES:
        raise OrchestratorError("E1612", f"metadata is {size} bytes of JSON; at most "
                                f"{MAX_METADATA_BYTES} are kept",
                                {"field": "metadata", "problem": "too large",
                                 "maxBytes": MAX_METADATA_BYTES, "bytes": size})
    return text


def heartbeat(session_id: str, *, task_id: str | None = None,
              conversation_summary: str | None = None,
              unsaved_changes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """One conditional UPDATE; reasons for refusal are looked up only when it touched nothing."""
    return beat(session_id, task_id=task_id, conversation_summary=conversation_summary,
                unsaved_changes=unsaved_changes)[0]


# The heartbeat's one conditional UPDATE, ``%(name)s`` parameters: session, task,
# summary, changes. The self-join reads the row as the statement's snapshot saw it: the
# previous heartbeat, for the heartbeat-age histogram, in the same round trip. The one-row
# set_config join makes the commit asynchronous: a liveness timestamp lost in a database
# crash costs nothing, and not waiting for the WAL flush is what lets heartbeats from many
# agents through at once. It touches nothing (no row) unless the session is live and the
# task, if one is named, is of the session's project. record_activity runs it as the
# first part of its own statement (activity.py), so a flush is one round trip.
def beat_sql() -> str:
    return (
        f"UPDATE {sessions_table()} s SET last_heartbeat = now(), "
        "task_id = COALESCE(%(task)s, s.task_id), "
        "conversation_summary = COALESCE(%(summary)s, s.conversation_summary), "
        "unsaved_changes = COALESCE(%(changes)s::jsonb, s.unsaved_changes) "
        f"FROM {sessions_table()} prev, "
        "(SELECT set_config('synchronous_commit', 'off', true)) AS async_commit "
        "WHERE prev.id = s.id AND s.session_id = %(session)s "
        "AND s.status IN ('active', 'compacted') "
        f"AND (%(task)s::text IS NULL OR EXISTS (SELECT 1 FROM {tasks_table()} t "
        "WHERE t.task_id = %(task)s::text AND t.project_id = s.project_id)) "
        "RETURNING s.last_heartbeat AS last, prev.last_heartbeat AS previous, "
        "s.task_id AS current_task, s.project_id, s.project_dir, s.status, "
        "prev.task_id AS previous_task, "
        # A paused session's heartbeat (a watchdog beating while the agent waits at a
        # usage limit) leaves the pause alone; the answer says it is paused.
        f"EXISTS (SELECT 1 FROM {DETAIL_TABLE} d WHERE d.session_id = s.session_id "
        "AND d.paused_at IS NOT NULL) AS paused, "
        f"EXISTS (SELECT 1 FROM {NOTICES_TABLE} n WHERE n.session_id = s.session_id "
        "AND n.delivered_at IS NULL) AS notices_waiting")


def beat_params(session_id: str, task_id: str | None, conversation_summary: str | None,
                unsaved_changes: list[dict[str, Any]] | None) -> dict[str, Any]:
    """beat_sql's parameters."""
    return {"session": session_id, "task": task_id, "summary": conversation_summary,
            "changes": None if unsaved_changes is None else json.dumps(unsaved_changes)}


def beat(session_id: str, *, task_id: str | None = None,
         conversation_summary: str | None = None,
         unsaved_changes: list[dict[str, Any]] | None = None
         ) -> tuple[dict[str, Any], bool]:
    """``heartbeat``'s answer, and whether the session has notices waiting (read by the
    same statement, so record_activity takes them only when there are some)."""
    # Prepared (foundation.core.prepared): planning it cost as much as running it.
    row = prepared.fetch_one(beat_sql(), beat_params(session_id, task_id, conversation_summary,
                                                   unsaved_changes))
    return beaten(session_id, task_id, row)


def beaten(session_id: str, task_id: str | None, row: dict[str, Any] | None
           ) -> tuple[dict[str, Any], bool]:
    """What follows beat_sql's ``row`` (None: it touched nothing, and this raises why):
    the session's work on a newly named task, the heartbeat-age metric, the Redis and
    file markers; ``beat``'s answer."""
    if row is None:
        status = session_status(session_id)
        if status in LIVE_STATUSES and task_id is not None:
            owner = project_of_task(task_id)
            if owner is None:
                raise task_not_found(task_id)
            raise projects_differ(f"Task {task_id!r} is in another project than session "
                                  f"{session_id!r}: a session works in one project",
                                  {task_id: owner})
        raise refuse_for_status(session_id, status, action="sending heartbeats")
    last, previous, current_task, project_id, project_dir, status, previous_task = (
        row["last"], row["previous"], row["current_task"], row["project_id"],
        row["project_dir"], row["status"], row["previous_task"])
    if task_id is not None and task_id != previous_task:
        # Rare (an agent moving to another task), so it costs a heartbeat nothing usually.
        record_work(session_id, task_id)
        signals.session_task_changed.send(sender=ActiveSession, session_id=session_id,
                                          task_id=task_id)
    if previous is not None:
        metrics.heartbeat_age_seconds.observe(max(0.0, (last - previous).total_seconds()))
    saved_to = {"database": True, **markers.mark_alive(session_id, current_task, project_id,
                                                       project_dir, last)}
    return {"success": True, "sessionId": session_id, "status": status,
            "lastHeartbeat": iso(last), "taskId": current_task,
            "nextHeartbeatMs": settings.HEARTBEAT_INTERVAL_MS, "savedTo": saved_to,
            "paused": bool(row["paused"])}, bool(row["notices_waiting"])


# end_session in one round trip (it was nine: BEGIN, the detail lock, the end, the count,
# the handoff's lock, deactivation and insert, COMMIT, and the history row after): prepared
# statements in one pipeline, one transaction. The end marks the transaction
# (``_ENDING``, transaction-local) only if it ended the session, and what follows does its
# work only under that mark: a session that was not live gets no note. The mark is
# cleared first, for a caller inside a longer transaction.
_ENDING = "orchestrator.ending_session"
_ENDED = f"current_setting('{_ENDING}', true) = %(session)s::varchar"
_END_STATEMENTS = (
    f"SELECT set_config('{_ENDING}', '', true)",
    # The detail row first: event appends take it too, so none can slip in between this
    # end and its commit (nothing is appended to an ended session's log).
    f"SELECT agent_id FROM {DETAIL_TABLE} WHERE session_id = %(session)s FOR UPDATE",
    f"UPDATE {sessions_table()} SET status = 'ended', ended_at = now(), "
    "recovery_needed = FALSE WHERE session_id = %(session)s "
    f"AND status IN ('active', 'compacted') RETURNING set_config('{_ENDING}', session_id, true)",
    *(statement.format(sessions=sessions_table(), ended=f"{_ENDED} AND %(leave)s",
                       agent=f"COALESCE(%(agent)s, (SELECT d.agent_id FROM {DETAIL_TABLE} d "
                             "WHERE d.session_id = s.session_id))")
      for statement in handoffs.LEAVE_STATEMENTS),
    # The learnings, in the order given, for the project's next sessions
    # (the WARM tier of their context bundles); only when this call ended the session.
    project_learnings.insert_sql(
        "SELECT s.project_id, l.text, s.session_id, "
        f"COALESCE(%(agent)s, (SELECT d.agent_id FROM {DETAIL_TABLE} d "
        "WHERE d.session_id = s.session_id)), now() "
        f"FROM {sessions_table()} s, unnest(%(learnings)s::text[]) WITH ORDINALITY "
        f"AS l(text, n) WHERE s.session_id = %(session)s AND {_ENDED} ORDER BY l.n"),
    f"""SELECT s.started_at, s.ended_at, s.task_id, s.project_id, s.project_dir,
       {_ENDED} AS ended_now, COALESCE(%(agent)s, d.agent_id) AS agent_id,
       (SELECT count(DISTINCT v.task_id) FROM {qualified('context_versions')} v
        WHERE v.project_id = s.project_id AND v.session_id = s.session_id) AS tasks_worked,
       {", ".join(f"h.{f.column} AS handoff_{f.column}" for f in handoffs.HANDOFF_FIELDS)}
FROM {sessions_table()} s
LEFT JOIN {DETAIL_TABLE} d ON d.session_id = s.session_id
LEFT JOIN {SessionHandoff._meta.db_table} h ON h.project_id = s.project_id AND h.active
     AND h.from_session_id = s.session_id AND {_ENDED} AND %(leave)s
WHERE s.session_id = %(session)s""",
)


def end_session(session_id: str, *, summary: str | None = None,
                open_items: list[str] | None = None,
                agent_id: str | None = None,
                learnings: list[str] | None = None) -> dict[str, Any]:
    open_items = open_items or []
    learned = project_learnings.checked(learnings)
    row = prepared.fetch_one_after(_END_STATEMENTS, {
        "session": session_id, "agent": agent_id, "summary": summary or "",
        "open_items": json.dumps(open_items), "leave": bool(summary or open_items),
        "learnings": learned})
    if row is None or not row["ended_now"]:
        raise refuse_for_status(session_id, session_status(session_id), action="ending it")
    started_at, ended_at, task_id = row["started_at"], row["ended_at"], row["task_id"]
    project_id, agent_id = row["project_id"], row["agent_id"]
    tasks_worked = row["tasks_worked"]
    handoff = handoffs.handoff_from_columns(row, "handoff_")
    announce_end(session_id, "ended")
    duration = (ended_at - started_at).total_seconds() if started_at else None
    logger.info("Session ended", extra={"sessionId": session_id, "projectId": project_id,
                                        "duration": duration, "tasksWorked": tasks_worked,
                                        "learnings": len(learned)})
    markers.mark_gone(session_id, project_id, "ended")
    status = notifications.notify(
        f"{project_id} session closed - {agent_id or session_id}"
        + (f" - {summary}" if summary else ""))
    return {"success": True, "sessionId": session_id, "status": "ended",
            "endedAt": iso(ended_at), "durationSeconds": duration, "taskId": task_id,
            "tasksWorked": tasks_worked, "handoff": handoffs.handoff_data(handoff),
            "learningsRecorded": len(learned), "notificationStatus": status}
