"""Periodic sync of the Redis cache and file backups from Postgres (spec 4.1.10): the
sync_hot_context tool through the registry.

Repairs whatever a Redis or file failure on the write path left behind. And the replay
of the saves held while Postgres was unreachable (contexts/services/pending.py).
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from orchestrator.core.jobruns import run_job


def summarize(result: dict[str, Any]) -> str:
    synced = result.get("synced") or result.get("error", {}).get("details", {}).get("synced")
    if not synced:
        return result.get("error", {}).get("message", "")
    return (f"{synced['redis']['taskContexts']} task(s) cached, "
            f"{synced['files']['taskContexts']} file(s) written")


@shared_task(name="contexts.sync_hot_context")
def sync_hot_context_task(transport: str = "task", progress=None) -> dict[str, Any]:
    return run_job("hot sync", "sync_hot_context", transport=transport, summarize=summarize,
                   progress=progress)


@shared_task(name="contexts.replay_pending_saves")
def replay_pending_saves_task(transport: str = "task") -> dict[str, Any]:
    return run_job("pending-save replay", "replay_pending_saves", transport=transport,
                   summarize=lambda r: (f"{len(r['applied'])} held save(s) applied, "
                                        f"{len(r['rejected'])} refused, "
                                        f"{r['remaining']} still held"))
