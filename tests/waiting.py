"""Polling for effects that land asynchronously (background writers, beat, workers)."""

from __future__ import annotations

import time
from collections.abc import Callable


def wait_for(predicate: Callable[[], object], timeout: float = 10.0,
             interval: float = 0.05) -> bool:
    """True as soon as ``predicate()`` is truthy; False once ``timeout`` seconds passed."""
    deadline = time.monotonic() + timeout
    while True:
        if predicate():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval)
