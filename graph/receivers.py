"""Drain the graph outbox after the changes that queue rows in it.

The rows themselves are written by triggers inside the changing transaction (migration
0003); these receivers only ask for a drain once the change has committed (the senders
fire after their transaction commits). The drain runs off the request path
(GRAPH_OUTBOX_DELAY_MS), so a receiver costs a save a flag set, never a graph call.
"""

from __future__ import annotations

from typing import Any

from graph.services.outbox import request_drain


def on_mirrored_change(sender: Any, **kwargs: Any) -> None:
    request_drain()


def connect() -> None:
    from contexts.signals import task_changed
    from sessions.signals import (
        session_ended,
        session_started,
        session_task_changed,
        sessions_ended,
        sessions_removed,
    )

    for signal, name in ((task_changed, "task_changed"),
                         (session_started, "session_started"),
                         (session_ended, "session_ended"), (sessions_ended, "sessions_ended"),
                         (session_task_changed, "session_task_changed"),
                         (sessions_removed, "sessions_removed")):
        signal.connect(on_mirrored_change, dispatch_uid=f"graph.{name}")
