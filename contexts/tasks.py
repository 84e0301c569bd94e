"""Periodic jobs of contexts, tools through the registry: the sync of the Redis cache and
file backups from Postgres, which repairs whatever a Redis or file failure on the write
path left behind; the replay of the saves held while Postgres was unreachable
(contexts/services/pending.py); and the checkpoint check (every snapshot against its
hash).
"""

from __future__ import annotations

from typing import Any

from celery import shared_task

from foundation.core.jobruns import run_job


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


def summarize_check(result: dict[str, Any]) -> str:
    if result.get("success") is False:
        return result.get("error", {}).get("message", "")
    return (f"{result['checked']} checkpoint(s) checked, {len(result['corrupt'])} corrupt "
            f"({len(result['newlyCorrupt'])} new), {len(result['repaired'])} verified again")


@shared_task(name="contexts.check_checkpoints")
def check_checkpoints_task(transport: str = "task") -> dict[str, Any]:
    """The periodic checkpoint check (contexts.services.checkpoint_check)."""
    return run_job("checkpoint check", "check_checkpoints", transport=transport,
                   summarize=summarize_check)
