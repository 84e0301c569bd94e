"""OS names for the server's own threads.

Python before 3.14 leaves every thread with its process's name, so ``top -H``, ``ps -L``
and ``/proc/<pid>/task/<tid>/comm`` could not tell a tool thread from a background writer,
and the capacity benchmark (bench.agents) could not say which of them used a web worker's
CPU. Each long-lived thread names itself when it starts.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import Any

# The kernel keeps the first 15 bytes of a thread's name.
OS_NAME_BYTES = 15


def name_this_thread(name: str) -> None:
    """Give the calling thread ``name`` (cut to 15 bytes) as its OS name where the OS keeps
    one in /proc (Linux); elsewhere nothing happens."""
    try:
        with open(f"/proc/self/task/{threading.get_native_id()}/comm", "w") as comm:
            comm.write(name.encode()[:OS_NAME_BYTES].decode(errors="ignore"))
    except OSError:
        pass


class ThreadPerProcess:
    """A daemon thread started on first use in each process. A forked child (the web
    server's workers, Celery's prefork pool) inherits the object but not its thread, so
    the process id, not a flag, says whether this process has started it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._started_in: int | None = None

    def start(self, target: Callable[..., Any], *args: Any) -> None:
        """Run ``target(*args)`` on the thread, unless this process started it already."""
        if self._started_in == os.getpid():
            return
        with self._lock:
            if self._started_in != os.getpid():
                threading.Thread(target=target, args=args, daemon=True,
                                 name=self.name).start()
                self._started_in = os.getpid()
