"""Task changes broadcast on Redis, for listeners in other processes.

``task_changed`` is a signal of the process that saved: a web worker, a Celery worker, a
command. Whoever waits for a task to change in another process (an MCP client subscribed
to a task's context is held by whichever web worker took its request) learns it from this
Redis channel instead: one message per changed task, its id as the payload.

Publishing is off the request path: the receiver only notes the task id and one daemon
thread per process publishes what was noted since its last round (several saves of one
task in between are one message). A listener is told "this changed, read it again", so a
message lost while Redis is down costs a refresh, never data: the save itself never
waits for, or fails on, this channel.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from foundation.backends import redis_store
from foundation.observability import threads

logger = logging.getLogger("orchestrator.contexts")

_pending: dict[str, None] = {}  # task ids noted since the last round, in order
_lock = threading.Lock()
_wake = threading.Event()
_thread: threading.Thread | None = None
_failing = False  # the last round failed: say so once per outage, not once per round


def channel() -> str:
    """The channel of task changes. Redis channels are not per database, so the name
    carries the database REDIS_URL selects: stacks sharing one Redis on different
    databases (the suite's parallel workers) do not hear each other."""
    database = redis_store.client().connection_pool.connection_kwargs.get("db", 0)
    return redis_store.key("events", str(database), "task-changed")


def on_task_changed(sender: Any, task_id: str, **kwargs: Any) -> None:
    """``task_changed`` receiver: note the task for the publisher thread."""
    global _thread
    with _lock:
        _pending[task_id] = None
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_publish_forever, name="task-events",
                                       daemon=True)
            _thread.start()
    _wake.set()


def _publish_forever() -> None:
    threads.name_this_thread("task-events")
    while True:
        _wake.wait()
        _wake.clear()
        publish_pending()


def publish_pending() -> None:
    """Publish the task ids noted so far, in one pipeline."""
    with _lock:
        task_ids = list(_pending)
        _pending.clear()
    if not task_ids:
        return
    name = channel()

    def send(client: Any) -> None:
        pipe = client.pipeline(transaction=False)
        for task_id in task_ids:
            pipe.publish(name, task_id)
        pipe.execute()

    global _failing
    try:
        redis_store.run(send)
    except redis_store.RedisUnavailable as exc:
        # Listeners miss these changes; they read the task again when they reconnect.
        if not _failing:
            logger.warning("task changes not broadcast until Redis is back: %s", exc)
        _failing = True
    else:
        if _failing:
            logger.info("task changes broadcast again")
        _failing = False
