"""Drain the graph outbox: apply queued task, session and work changes to the Bolt mirror.

Triggers queue a row in the very transaction that changes a mirrored row (migration
0003), so nothing on the request path waits for the graph server and a graph outage
costs a save nothing. ``drain_outbox`` runs after commits (``request_drain``: a
per-process background thread, at most every GRAPH_OUTBOX_DELAY_MS), on beat
(``graph.drain_outbox``) and from ``manage.py drain_graph_outbox``; ``sync_graph``
stays the backstop that repairs everything.

Drainers take one transaction-level advisory lock, so batches are applied one at a time
in id order. A batch is written to the graph in one Bolt transaction, inside the
Postgres transaction that deletes its rows, which commits only once that write
succeeded: a failure rolls the delete back and leaves them queued for the next drain.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from contexts.models import TaskContext
from foundation.backends.coalesce import CoalescingWriter
from foundation.core import prepared
from foundation.core.errors import failure_reason
from foundation.core.stamps import now_iso
from foundation.observability import metrics
from graph import backend
from graph.models import GraphOutboxEntry
from graph.readers import sortable_stamp
from graph.services import mirror
from graph.services.mirror import Statements
from sessions.models import ActiveSession

logger = logging.getLogger("orchestrator.graph")

BATCH_SIZE = 500
# Rows per Bolt transaction while the graph server is slow. A batch it did not answer
# within NEO4J_READ_TIMEOUT_SECONDS is given up by us but still worked on by the server,
# and the queue only grows meanwhile: at 500 agents on a loaded two-core machine every
# drain of a 500-row batch timed out for minutes (the mirror never caught up, the graph
# server spent 15 % of a core on batches no one waited for). So a failed drain halves the
# batch, down to MIN_BATCH_SIZE, and each batch written doubles it again, up to BATCH_SIZE
# (a failure of another kind costs a few smaller batches, and a batch the graph server
# refuses is split until what it refuses is found).
MIN_BATCH_SIZE = 25
batch_size = BATCH_SIZE
# The advisory lock key of the drainers (and of sync_graph): any fixed 64-bit number.
LOCK_KEY = 0x6772617068_6f7574  # "graph" "out"
OUTBOX_TABLE = connection.ops.quote_name(GraphOutboxEntry._meta.db_table)


def pending_count() -> int:
    return GraphOutboxEntry.objects.count()


# True while the mirror has changes to catch up on (readers then use Postgres); a column
# expression, so a read can ask it in the query it sends anyway.
LAGGING_SQL = f"EXISTS (SELECT 1 FROM {OUTBOX_TABLE})"


def lagging() -> bool:
    # Prepared: planning the look cost Postgres more than running it (72 of 100 us; every
    # drain asks it first).
    row = prepared.fetch_one(_LAGGING, ())
    return bool(row and row["lagging"])


_LAGGING = f"SELECT {LAGGING_SQL} AS lagging"


@contextlib.contextmanager
def exclusive() -> Iterator[None]:
    """Hold the drainers' lock outside a transaction (sync_graph), released on exit."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def queued_ids() -> list[int]:
    return list(GraphOutboxEntry.objects.values_list("id", flat=True))


def forget(ids: list[int]) -> None:
    """Drop queued rows that a full sync has covered."""
    for start in range(0, len(ids), 10000):
        GraphOutboxEntry.objects.filter(id__in=ids[start:start + 10000]).delete()
    metrics.graph_outbox_applied_total.labels("sync").inc(len(ids))


def _task_statements(task_ids: list[str]) -> Statements:
    """Task nodes and their agentType HANDLES edges as task_contexts has them now."""
    tasks = {t.task_id: t for t in TaskContext.objects.filter(task_id__in=task_ids).only(
        "task_id", "name", "status", "current_phase", "priority", "score", "agent_type")}
    gone = [t for t in task_ids if t not in tasks]
    statements: Statements = []
    if tasks:
        statements += [
            ("UNWIND $rows AS p MERGE (t:Task {taskId: p.taskId}) SET t.name = p.name, "
             "t.status = p.status, t.phase = p.phase, t.priority = p.priority, "
             "t.score = p.score", {"rows": [mirror.task_props(t) for t in tasks.values()]}),
            mirror.handles_sync_statement({t.task_id: [t.agent_type] if t.agent_type else []
                                           for t in sorted(tasks.values(),
                                                           key=lambda t: t.task_id)},
                                          "agentType"),
        ]
    if gone:
        statements.append(("UNWIND $ids AS id MATCH (t:Task {taskId: id}) DETACH DELETE t",
                           {"ids": gone}))
    return statements


def _session_statements(session_ids: list[str],
                        edges: dict[str, list[dict[str, Any]]]) -> Statements:
    """Session nodes as active_sessions has them now, each with the WORKS_ON edges of
    ``edges`` (session id -> its queued work rows present in Postgres; the sessions'
    rows are taken out of it): a start_session's node and edge in one statement."""
    sessions = {sid: {"id": sid, "status": status or "active",
                      "started": sortable_stamp(started) if started else None,
                      "work": edges.pop(sid, [])}
                for sid, status, started in ActiveSession.objects.filter(
                    session_id__in=session_ids).values_list("session_id", "status",
                                                            "started_at")}
    gone = [s for s in session_ids if s not in sessions]
    statements: Statements = []
    if sessions:
        # The UNWIND of a session without work ends its row after the node's SET, which
        # stays written.
        statements.append(
            ("UNWIND $rows AS r MERGE (s:Session {sessionId: r.id}) SET s.status = r.status, "
             "s.startedAt = r.started WITH s, r UNWIND r.work AS w "
             "MATCH (t:Task {taskId: w.task}) MERGE (s)-[e:WORKS_ON]->(t) "
             "SET e.startedAt = w.started", {"rows": list(sessions.values())}))
    if gone:
        statements.append(("UNWIND $ids AS id MATCH (s:Session {sessionId: id}) "
                           "DETACH DELETE s", {"ids": gone}))
    return statements


def _work_rows(pairs: list[tuple[str, str]]
               ) -> tuple[dict[str, list[dict[str, Any]]], list[dict[str, str]]]:
    """The queued (session, task) pairs as agent_sessions_sessionwork has them: the live
    ones by session id, and those gone."""
    live = {(w.session_id, w.task_id): w for w in mirror.live_work().filter(
        session_id__in={s for s, _ in pairs}, task_id__in={t for _, t in pairs})}
    present: dict[str, list[dict[str, Any]]] = {}
    for s, t in pairs:
        if (s, t) in live:
            present.setdefault(s, []).append(
                {"task": t, "started": sortable_stamp(live[(s, t)].started_at)})
    return present, [{"id": s, "task": t} for s, t in pairs if (s, t) not in live]


def _work_statements(present: dict[str, list[dict[str, Any]]], gone: list[dict[str, str]],
                     task_ids: set[str]) -> Statements:
    """WORKS_ON edges of queued pairs whose session was not queued in the batch (those
    are written with their Session node), the removal of those gone, and the session
    HANDLES edges of their tasks."""
    rows = [{"id": s, **work} for s, works in present.items() for work in works]
    statements: Statements = []
    if rows:
        statements.append(
            ("UNWIND $rows AS r MATCH (s:Session {sessionId: r.id}) "
             "MATCH (t:Task {taskId: r.task}) MERGE (s)-[w:WORKS_ON]->(t) "
             "SET w.startedAt = r.started", {"rows": rows}))
    if gone:
        statements.append(
            (mirror.delete_matched("UNWIND $rows AS r MATCH (:Session {sessionId: r.id})"
                                   "-[w:WORKS_ON]->(:Task {taskId: r.task})", "w"),
             {"rows": gone}))
    return statements + mirror.session_handles_statements(task_ids)


def statements_for(entries: list[tuple[str, str, str | None]]) -> Statements:
    """The graph writes bringing every queued entity in step with Postgres.

    Nodes come before edges whatever the queue order (an edge needs both ends), and each
    entity is written once per batch however often it was queued: the state written is
    the current one, which already includes every queued change.

    A work entry writes its WORKS_ON edge (MATCHing both ends) and its task's session
    HANDLES edges, not the Session and Task nodes: each of those was queued by its own
    change with a lower id (a session's or task's row is written, and queued, before a
    work record can name it: start_session's one statement inserts the session row and
    then, from it, the work row; a task exists, committed, before work on it is
    recorded), so in this batch or in an earlier one, which was applied first (batches
    go in id order and leave the queue only once written). Writing the unchanged nodes
    again cost every start_session's drain three statements of the graph server's time.
    A graph that lost nodes all the same (a server that lost its data) is sync_graph's
    to repair, as it is for every other change.
    """
    tasks: dict[str, None] = {}
    sessions: dict[str, None] = {}
    work: dict[tuple[str, str], None] = {}
    for kind, entity_id, task_id in entries:
        if kind == "task":
            tasks[entity_id] = None
        elif kind == "session":
            sessions[entity_id] = None
        elif kind == "work" and task_id:
            work[(entity_id, task_id)] = None
    present, gone = _work_rows(list(work)) if work else ({}, [])
    statements: Statements = []
    if tasks:
        statements += _task_statements(list(tasks))
    if sessions:
        statements += _session_statements(list(sessions), present)
    if work:
        statements += _work_statements(present, gone, {t for _, t in work})
    return statements


# A batch taken, in one round trip with the transaction's BEGIN (a pipeline; the DELETE
# starts, and takes its snapshot, once the lock is held). One drainer at a time, so
# batches reach the graph in queue order; a second one waits and then finds what the
# first left (or rows queued since). The rows are taken out of the queue by the
# statement that reads them, in the drain's transaction: a failed graph write rolls the
# delete back, and they stay queued for the next drain.
_TAKE_BATCH = ("SELECT pg_advisory_xact_lock(%(key)s)",
               f"DELETE FROM {OUTBOX_TABLE} WHERE id IN (SELECT id FROM {OUTBOX_TABLE} "
               "ORDER BY id LIMIT %(limit)s) RETURNING id, kind, entity_id, task_id")


def _drain_batch(limit: int) -> int:
    """Apply up to ``limit`` rows; the number applied (raises if the graph write fails)."""
    # Every web process drains after its own commits, so most drains find that another
    # process took their rows already (bench.agents, 1,000 agents: 1,326 of 1,899).
    # One look first spares those the transaction and the wait for the drainers' lock.
    # Rows committed after this look are drained by the drain their commit starts.
    if not lagging():
        return 0
    with transaction.atomic():
        rows = sorted(prepared.fetch_all_after(_TAKE_BATCH, {"key": LOCK_KEY,
                                                             "limit": limit}))
        if not rows:
            return 0
        statements = statements_for([(kind, entity, task) for _, kind, entity, task in rows])
        if statements:
            backend.write(statements)
    return len(rows)


def drain_outbox() -> dict[str, Any]:
    """Apply every queued change to the mirror; a report (never raises).

    With the graph disabled the queue is discarded: there is no mirror to keep, and
    sync_graph rebuilds it from Postgres when the graph is turned back on.
    """
    if not settings.ENABLE_NEO4J:
        discarded = GraphOutboxEntry.objects.all().delete()[0]
        return {"success": True, "graph": "disabled", "discarded": discarded,
                "drainedAt": now_iso()}
    if not backend.available():
        return {"success": False, "graph": "failed", "applied": 0,
                "pending": pending_count(), "error": "circuit open after a recent failure",
                "drainedAt": now_iso()}
    global batch_size
    applied = 0
    try:
        while True:
            limit = batch_size
            done = _drain_batch(limit)  # committed: these rows are out of the queue
            applied += done
            metrics.graph_outbox_applied_total.labels("drain").inc(done)
            if done:
                batch_size = min(BATCH_SIZE, limit * 2)
            if done < limit:
                break
    except Exception as exc:
        batch_size = max(MIN_BATCH_SIZE, batch_size // 2)
        reason = failure_reason(exc)
        logger.warning("graph outbox not drained (kept for the next drain): %s", exc)
        return {"success": False, "graph": "failed", "applied": applied,
                "pending": pending_count(), "error": reason, "drainedAt": now_iso()}
    return {"success": True, "graph": "synced", "applied": applied, "drainedAt": now_iso()}


def _drain_in_background() -> bool:
    return drain_outbox()["success"]


# After a commit that queued rows: drain off the request path, once per burst.
drainer = CoalescingWriter("graph-outbox", _drain_in_background,
                           delay_setting="GRAPH_OUTBOX_DELAY_MS")


def request_drain() -> None:
    """Ask for a drain soon (a background thread); with GRAPH_OUTBOX_DELAY_MS=0, now."""
    if settings.ENABLE_NEO4J:
        drainer.request()
