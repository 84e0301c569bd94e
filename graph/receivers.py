"""Keep the graph mirror in step with task, switch and session changes.

The senders fire after their transaction commits. A receiver must never raise into
them: a graph failure is logged and left for sync_graph to repair.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import wraps
from typing import Any

from django.conf import settings

from graph.services import mirror

logger = logging.getLogger("orchestrator.graph")


def _never_raises(receiver: Callable[..., None]) -> Callable[..., None]:
    """Guard a receiver; with the graph disabled, skip it (building its statements reads
    Postgres, ~1 ms a save for nothing)."""
    @wraps(receiver)
    def guarded(*args: Any, **kwargs: Any) -> None:
        if not settings.ENABLE_NEO4J:
            return
        try:
            receiver(*args, **kwargs)
        except Exception:
            logger.exception("graph receiver %s failed; sync_graph will repair",
                             receiver.__name__)
    return guarded


@_never_raises
def on_task_changed(sender: Any, task_id: str, change_type: str | None = None,
                    **kwargs: Any) -> None:
    mirror.run(mirror.task_statements(task_id))


@_never_raises
def on_task_switched(sender: Any, to_task_id: str, session_id: str | None = None,
                     from_task_id: str | None = None, **kwargs: Any) -> None:
    statements = []
    if from_task_id:
        statements += mirror.task_statements(from_task_id)
    if session_id:  # the target's Task node comes with the session's work on it
        statements += mirror.session_statements(session_id, work_on=[to_task_id])
    else:
        statements += mirror.task_statements(to_task_id)
    mirror.run(statements)


@_never_raises
def on_session_started(sender: Any, session_id: str, task_id: str | None = None,
                       **kwargs: Any) -> None:
    mirror.run(mirror.session_statements(session_id, work_on=[task_id] if task_id else []))


@_never_raises
def on_session_task_changed(sender: Any, session_id: str, task_id: str, **kwargs: Any) -> None:
    mirror.run(mirror.session_statements(session_id, work_on=[task_id]))


@_never_raises
def on_session_ended(sender: Any, session_id: str, **kwargs: Any) -> None:
    mirror.run(mirror.session_statements(session_id))


@_never_raises
def on_sessions_ended(sender: Any, session_ids: list[str], status: str = "ended",
                      **kwargs: Any) -> None:
    mirror.run(mirror.sessions_status_statements(session_ids, status))


@_never_raises
def on_sessions_removed(sender: Any, session_ids: list[str], task_ids: Iterable[str] = (),
                        **kwargs: Any) -> None:
    # The tasks they worked on lose the agents they brought.
    mirror.run([("UNWIND $ids AS id MATCH (s:Session {sessionId: id}) DETACH DELETE s",
                 {"ids": list(session_ids)}), *mirror.session_handles_statements(task_ids)])


def connect() -> None:
    from contexts.signals import task_changed, task_switched
    from sessions.signals import (
        session_ended,
        session_started,
        session_task_changed,
        sessions_ended,
        sessions_removed,
    )

    task_changed.connect(on_task_changed, dispatch_uid="graph.task_changed")
    task_switched.connect(on_task_switched, dispatch_uid="graph.task_switched")
    session_started.connect(on_session_started, dispatch_uid="graph.session_started")
    session_ended.connect(on_session_ended, dispatch_uid="graph.session_ended")
    sessions_ended.connect(on_sessions_ended, dispatch_uid="graph.sessions_ended")
    session_task_changed.connect(on_session_task_changed,
                                 dispatch_uid="graph.session_task_changed")
    sessions_removed.connect(on_sessions_removed, dispatch_uid="graph.sessions_removed")
