"""The web worker's tool threads: a fixed pool taking work from one queue.

Why not ``concurrent.futures.ThreadPoolExecutor``: the HTTP protocol hands every hook
call to a thread and answers it through the event loop (``tool_protocol``), so it needs
no Future, and the executor's ``submit`` made one anyway (a Future with its Condition,
the shutdown lock, the thread-count semaphore), then set its result under that Condition
in the thread. At 2,000 agents ``submit`` alone was 11 % of the event loop's samples.
``call`` puts the function on a C queue and nothing else; ``submit`` is the Executor's
(a Future, for ``loop.run_in_executor``: the MCP and ASGI paths).
"""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

from foundation.observability import threads

logger = logging.getLogger(__name__)

_STOP = object()


class ToolThreads(Executor):
    """``count`` threads named ``name_<n>``, started together on first use in each process
    (a forked child inherits the object, not its threads)."""

    def __init__(self, count: int, name: str) -> None:
        self.count, self.name = count, name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._started_in: int | None = None
        self._threads: list[threading.Thread] = []

    def call(self, function: Callable[..., Any], *args: Any) -> None:
        """Run ``function(*args)`` in a tool thread; nobody waits for it (it reports its
        own outcome), and what it raises is logged."""
        self._start()
        self._queue.put((function, args, None))

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self._start()
        future: Future[Any] = Future()
        self._queue.put((lambda: fn(*args, **kwargs), (), future))
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Let the threads finish what is queued, then end; ``wait``: until they have."""
        with self._lock:
            running, self._started_in = self._threads, None
            self._threads = []
        for _ in running:
            self._queue.put(_STOP)
        if wait:
            for thread in running:
                thread.join()

    def _start(self) -> None:
        if self._started_in == os.getpid():
            return
        with self._lock:
            if self._started_in == os.getpid():
                return
            # Daemon threads, stopped by shutdown at exit: a thread waiting on the queue
            # would otherwise keep the interpreter from exiting.
            self._threads = [threading.Thread(target=self._work, name=f"{self.name}_{n}",
                                              daemon=True) for n in range(self.count)]
            for thread in self._threads:
                thread.start()
            self._started_in = os.getpid()
        atexit.register(self.shutdown)

    def _work(self) -> None:
        threads.name_this_thread(threading.current_thread().name)
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            function, args, future = item
            if future is None:
                try:
                    function(*args)
                except BaseException:
                    logger.exception("%s: a call failed outside its own handling", self.name)
                continue
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = function()
            except BaseException as exc:
                future.set_exception(exc)
            else:
                future.set_result(result)
