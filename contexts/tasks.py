"""Periodic sync of the Redis cache and file backups from Postgres (spec 4.1.10).

Repairs whatever a Redis or file failure on the write path left behind.
"""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task

from orchestrator.core.errors import OrchestratorError
from orchestrator.core.jobruns import record_job_run
from orchestrator.core.tools import ToolContext, call_tool

logger = logging.getLogger("orchestrator.contexts")


@shared_task(name="contexts.sync_hot_context")
def sync_hot_context_task() -> dict[str, Any]:
    with record_job_run("hot sync") as run:
        try:
            result = call_tool("sync_hot_context", {}, ToolContext("task", actor="celery-beat"))
        except OrchestratorError as exc:
            # A partial sync is retried by the next beat; report it, do not crash the worker.
            logger.warning("periodic hot sync: %s", exc)
            run.fail(f"{exc.code}: {exc.message}")
            return exc.to_dict()
        run.ok(f"{result['synced']['redis']['taskContexts']} task(s) cached, "
               f"{result['synced']['files']['taskContexts']} file(s) written")
        return result

