"""sync_graph: make the Bolt mirror match Postgres (beat task and management command).

Diff-based, and the report says what was repaired: missing or stale Task nodes and task
edges are written, ones Postgres no longer has are removed, and sessions get their
Session node, WORKS_ON edges and session HANDLES edges from agent_sessions_sessionwork.

The outbox keeps the mirror current change by change; this is the backstop. A full pass
reads every node and edge back from the graph server, which grows with every task and
session a team has had: at 2,000 agents it took 4.5 s and half a core of the graph
server, every five minutes. So beat runs it with ``check_first``: a handful of counts on
both sides, and the full pass only when they disagree (a graph server that lost its
data, a change the outbox never carried) or the last full pass is older than
GRAPH_FULL_SYNC_INTERVAL_SECONDS (a property that drifted with every count right).
"""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.db.models import Exists, OuterRef
from django.utils import timezone

from contexts.models import TaskContext
from foundation.core.errors import failure_reason
from foundation.core.models import JobRun
from foundation.core.stamps import now_iso
from graph import backend
from graph.models import TaskRelationship
from graph.readers import sortable_stamp
from graph.services import mirror, outbox
from graph.services.mirror import Statements, chunks, edge_props, task_props
from graph.types import GRAPH_LABELS, LABEL_TYPES
from sessions.models import ActiveSession
from sessions.services import work as session_work

logger = logging.getLogger("orchestrator.graph")

_TASK_FIELDS = ("taskId", "name", "status", "phase", "priority", "score")
_SET_TASK = "t.name = p.name, t.status = p.status, t.phase = p.phase, " \
            "t.priority = p.priority, t.score = p.score"


def _write(batches: list[Statements]) -> None:
    for statements in batches:
        backend.write(statements)


def _sync_tasks() -> tuple[dict[str, int], set[str]]:
    wanted = {t.task_id: task_props(t) for t in TaskContext.objects.only(
        "task_id", "name", "status", "current_phase", "priority", "score")}
    present = {row[0]: dict(zip(_TASK_FIELDS, row, strict=True)) for row in backend.cypher(
        "MATCH (t:Task) RETURN t.taskId, t.name, t.status, t.phase, t.priority, t.score")}
    missing = [p for k, p in wanted.items() if k not in present]
    stale = [p for k, p in wanted.items() if k in present and present[k] != p]
    extra = sorted(set(present) - set(wanted))
    _write([[(f"UNWIND $rows AS p CREATE (t:Task) SET t.taskId = p.taskId, {_SET_TASK}",
              {"rows": rows})] for rows in chunks(missing)])
    _write([[(f"UNWIND $rows AS p MATCH (t:Task {{taskId: p.taskId}}) SET {_SET_TASK}",
              {"rows": rows})] for rows in chunks(stale)])
    _write([[("UNWIND $ids AS id MATCH (t:Task {taskId: id}) DETACH DELETE t", {"ids": ids})]
            for ids in chunks(extra)])
    return {"created": len(missing), "updated": len(stale), "deleted": len(extra)}, set(wanted)


def _sync_handles(via: str, wanted: set[tuple[str, str]]) -> dict[str, int]:
    """Agent-HANDLES->Task edges of one origin ('agentType' or 'session') as Postgres has
    them: ``wanted`` holds (agentId, taskId) pairs."""
    present = {tuple(r) for r in backend.cypher(
        "MATCH (a:Agent)-[:HANDLES {via: $via}]->(t:Task) RETURN a.agentId, t.taskId",
        {"via": via})}
    missing = sorted(wanted - present)
    extra = [{"agent": a, "task": t} for a, t in sorted(present - wanted)]
    _write([[mirror.handles_statement(pairs, via)] for pairs in chunks(missing)])
    _write([[(mirror.delete_matched("UNWIND $rows AS r MATCH (:Agent {agentId: r.agent})"
                                    "-[h:HANDLES {via: $via}]->(:Task {taskId: r.task})", "h"),
              {"rows": rows, "via": via})]
            for rows in chunks(extra)])
    return {"created": len(missing), "deleted": len(extra)}


def _sync_agent_types() -> dict[str, int]:
    return _sync_handles("agentType", {
        (agent_type, task_id) for agent_type, task_id in
        TaskContext.objects.exclude(agent_type__isnull=True).exclude(agent_type="")
        .values_list("agent_type", "task_id") if agent_type})


def _sync_edges(task_ids: set[str]) -> dict[str, int]:
    wanted: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in TaskRelationship.objects.filter(relationship_type__in=list(GRAPH_LABELS)):
        if row.source_task_id in task_ids and row.target_task_id in task_ids:
            wanted[(row.source_task_id, row.target_task_id, row.relationship_type)] = \
                edge_props(row)
    labels = "|".join(GRAPH_LABELS.values())
    present = {(s, t, LABEL_TYPES[label]): {"s": s, "t": t, "reason": reason,
                                           "strength": strength}
               for s, t, label, reason, strength in backend.cypher(
                   f"MATCH (a:Task)-[e:{labels}]->(b:Task) "
                   "RETURN a.taskId, b.taskId, type(e), e.reason, e.strength")}
    counts = {"created": 0, "updated": 0, "deleted": 0}
    for kind, label in GRAPH_LABELS.items():
        missing = [p for k, p in wanted.items() if k[2] == kind and k not in present]
        stale = [p for k, p in wanted.items()
                 if k[2] == kind and k in present and present[k] != p]
        extra = [p for k, p in present.items() if k[2] == kind and k not in wanted]
        match = "UNWIND $rows AS e MATCH (a:Task {taskId: e.s}) MATCH (b:Task {taskId: e.t}) "
        _write([[(f"{match}CREATE (a)-[r:{label}]->(b) SET r.reason = e.reason, "
                  "r.strength = e.strength", {"rows": rows})] for rows in chunks(missing)])
        _write([[(f"{match}MATCH (a)-[r:{label}]->(b) SET r.reason = e.reason, "
                  "r.strength = e.strength", {"rows": rows})] for rows in chunks(stale)])
        _write([[(mirror.delete_matched(f"{match}MATCH (a)-[r:{label}]->(b)", "r"),
                  {"rows": rows})]
                for rows in chunks(extra)])
        counts["created"] += len(missing)
        counts["updated"] += len(stale)
        counts["deleted"] += len(extra)
    return counts


def _sync_sessions(task_ids: set[str]) -> dict[str, int]:
    """Session nodes, WORKS_ON edges and session HANDLES edges as Postgres has them."""
    counts = {"repaired": 0, "deleted": 0}
    sessions = {sid: {"id": sid, "status": status or "active",
                      "started": sortable_stamp(started) if started else None}
                for sid, status, started in ActiveSession.objects.values_list(
                    "session_id", "status", "started_at")}
    nodes = {r[0]: {"id": r[0], "status": r[1], "started": r[2]} for r in backend.cypher(
        "MATCH (s:Session) RETURN s.sessionId, s.status, s.startedAt")}
    stale_nodes = [row for sid, row in sessions.items() if nodes.get(sid) != row]
    gone = sorted(set(nodes) - set(sessions))
    _write([[("UNWIND $rows AS r MERGE (s:Session {sessionId: r.id}) SET s.status = r.status, "
              "s.startedAt = r.started", {"rows": rows})] for rows in chunks(stale_nodes)])
    _write([[("UNWIND $ids AS id MATCH (s:Session {sessionId: id}) DETACH DELETE s",
              {"ids": ids})] for ids in chunks(gone)])

    work = [w for w in mirror.live_work().values_list("session_id", "task_id", "agent_id",
                                                       "started_at") if w[1] in task_ids]
    wanted = {(sid, tid): sortable_stamp(started) for sid, tid, _, started in work}
    present = {(r[0], r[1]): r[2] for r in backend.cypher(
        "MATCH (s:Session)-[w:WORKS_ON]->(t:Task) RETURN s.sessionId, t.taskId, w.startedAt")}
    fix = [{"id": s, "task": t, "started": v} for (s, t), v in wanted.items()
           if present.get((s, t)) != v]
    extra = [{"id": s, "task": t} for s, t in present if (s, t) not in wanted]
    _write([[("UNWIND $rows AS r MATCH (s:Session {sessionId: r.id}) "
              "MATCH (t:Task {taskId: r.task}) MERGE (s)-[w:WORKS_ON]->(t) "
              "SET w.startedAt = r.started", {"rows": rows})] for rows in chunks(fix)])
    _write([[(mirror.delete_matched("UNWIND $rows AS r MATCH (:Session {sessionId: r.id})"
                                    "-[w:WORKS_ON]->(:Task {taskId: r.task})", "w"),
              {"rows": rows})] for rows in chunks(extra)])

    handles = _sync_handles("session", {(agent, tid) for _, tid, agent, _ in work if agent})
    # Work records of removed sessions are no one's truth any more.
    orphans = session_work.forget_work_of_removed_sessions()
    counts["repaired"] = len(stale_nodes) + len(fix) + handles["created"]
    counts["deleted"] = len(gone) + len(extra) + handles["deleted"] + orphans
    return counts


# The job name beat's runs are recorded under (graph.tasks): the last full pass is found
# among them.
JOB_NAME = "graph sync"
FULL_PASS_SUMMARY = "graph synced"


def _graph_count(query: str, params: dict[str, Any] | None = None) -> int:
    rows = backend.cypher(query, params or {})
    return int(rows[0][0]) if rows else 0


def counts() -> dict[str, dict[str, int]]:
    """What Postgres has and what the mirror holds, kind by kind, in one count each, and
    (``inFlight``) the changes queued in the outbox: under the drainers' lock nothing is
    applied meanwhile, so the mirror lags Postgres by those changes at most. Postgres is
    counted after the graph, and the queue last: a change the counts include is queued
    (or was applied before the graph was counted)."""
    with outbox.exclusive():
        found = _graph_counts()
        for kind, number in _postgres_counts().items():
            found[kind]["postgres"] = number
        found["inFlight"] = {"postgres": outbox.pending_count(), "graph": 0}
    return found


def _graph_counts() -> dict[str, dict[str, int]]:
    labels = "|".join(GRAPH_LABELS.values())
    handles = "MATCH (:Agent)-[h:HANDLES {via: $via}]->(:Task) RETURN count(h)"
    return {kind: {"graph": _graph_count(query, params)} for kind, query, params in (
        ("tasks", "MATCH (t:Task) RETURN count(t)", None),
        ("sessions", "MATCH (s:Session) RETURN count(s)", None),
        ("worksOn", "MATCH (:Session)-[w:WORKS_ON]->(:Task) RETURN count(w)", None),
        ("edges", f"MATCH (:Task)-[e:{labels}]->(:Task) RETURN count(e)", None),
        ("agentTypes", handles, {"via": "agentType"}),
        ("sessionAgents", handles, {"via": "session"}))}


def _postgres_counts() -> dict[str, int]:
    tasks = TaskContext.objects.filter(task_id=OuterRef("task_id"))
    work = mirror.live_work().filter(Exists(tasks))
    edges = TaskRelationship.objects.filter(
        relationship_type__in=list(GRAPH_LABELS),
        source_task_id__in=TaskContext.objects.values("task_id"),
        target_task_id__in=TaskContext.objects.values("task_id"))
    return {
        "tasks": TaskContext.objects.count(),
        "sessions": ActiveSession.objects.count(),
        "worksOn": work.values("session_id", "task_id").distinct().count(),
        "edges": edges.values("source_task_id", "target_task_id",
                              "relationship_type").distinct().count(),
        "agentTypes": TaskContext.objects.exclude(agent_type__isnull=True)
        .exclude(agent_type="").count(),
        "sessionAgents": work.exclude(agent_id__isnull=True).exclude(agent_id="")
        .values("agent_id", "task_id").distinct().count(),
    }


def full_pass_clock():
    """What the next full pass is due after: the last full pass that succeeded (beat's or
    the command's), else the earliest run on record (this one, on a new install: the
    counts tell whether the mirror needs the full pass sooner)."""
    runs = JobRun.objects.filter(job_name=JOB_NAME)
    full = runs.filter(outcome=JobRun.OK,
                       summary__startswith=FULL_PASS_SUMMARY).order_by("-id").first()
    if full is not None:
        return full.finished_at
    earliest = runs.order_by("id").first()
    return earliest.started_at if earliest else timezone.now()


def check_graph() -> dict[str, Any]:
    """The sync_graph tool with checkFirst: the counts, and the full pass only when
    they differ beyond what is queued, or it is due."""
    if not settings.ENABLE_NEO4J:
        return {"success": True, "graph": "disabled", "syncedAt": now_iso()}
    try:
        found = counts()
    except Exception as exc:
        reason = failure_reason(exc)
        logger.error("graph check failed: %s", exc)
        return {"success": False, "graph": "failed", "error": reason, "syncedAt": now_iso()}
    in_flight = found["inFlight"]["postgres"]
    differing = sorted(kind for kind, pair in found.items()
                       if kind != "inFlight" and abs(pair["postgres"] - pair["graph"]) > in_flight)
    due = (timezone.now() - full_pass_clock()).total_seconds() \
        >= settings.GRAPH_FULL_SYNC_INTERVAL_SECONDS
    if differing or due:
        report = sync_graph()
        return {**report, "counts": found, "reason": (
            f"counts differ: {', '.join(differing)}" if differing else "full pass due")}
    return {"success": True, "graph": "checked", "counts": found, "syncedAt": now_iso()}


def sync_graph() -> dict[str, Any]:
    """Repair the mirror from Postgres; a report of what changed (never raises).

    Runs under the outbox drain's lock, so a drain cannot write an older state between
    this sync's read and write; the queued changes this sync saw before reading Postgres
    are covered by it and leave the queue.
    """
    if not settings.ENABLE_NEO4J:
        return {"success": True, "graph": "disabled", "syncedAt": now_iso()}
    try:
        with outbox.exclusive():
            covered = outbox.queued_ids()
            backend.ensure_schema(force=True)  # a server that lost its data lost these too
            tasks, task_ids = _sync_tasks()
            report = {"tasks": tasks, "agents": _sync_agent_types(),
                      "edges": _sync_edges(task_ids), "sessions": _sync_sessions(task_ids)}
            outbox.forget(covered)
        # What was queued meanwhile, the orphan pruning above included.
        report["queued"] = outbox.drain_outbox().get("applied", 0)
    except Exception as exc:
        reason = failure_reason(exc)
        logger.error("sync_graph failed: %s", exc)
        return {"success": False, "graph": "failed", "error": reason, "syncedAt": now_iso()}
    backend.reset()
    logger.info("sync_graph done", extra={"report": report})
    return {"success": True, "graph": "synced", **report, "syncedAt": now_iso()}



