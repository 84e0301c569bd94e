"""Helpers for the conflict tests: real tasks, real Redis keys, real files. (write_lock, a
lock left in Redis, is the lock tests' helper: tests/locks/conftest.py.)"""

from __future__ import annotations


def detect(tools, **payload):
    return tools.ok("detect_conflicts", payload)
