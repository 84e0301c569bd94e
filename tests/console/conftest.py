"""Helpers for the console tests: tasks and sessions are created through the real tools."""

from __future__ import annotations

import pytest


@pytest.fixture
def make_task(tools):
    def make(task_id: str, **fields):
        body = {"taskId": task_id, "name": fields.pop("name", f"Task {task_id}"), **fields}
        return tools.ok("create_task", body)
    return make
