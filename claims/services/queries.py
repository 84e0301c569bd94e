"""Reading claims: who is editing what now, contested files first, and the
overview's counts."""

from __future__ import annotations

from typing import Any

from claims.services.claimants import repository_path
from claims.services.holders import Holder, holders_where
from contexts.services.tasks import project_of_task
from foundation.core.errors import task_not_found
from foundation.core.stamps import now_iso

# -- reading ------------------------------------------------------------------------------

def file_claims(project_ids: list[str] | None, *, paths: list[str] | None = None,
                task_id: str | None = None, session_id: str | None = None,
                include_recent: bool = True) -> dict[str, Any]:
    """Who is editing what now, contested paths first (more than one task holds them)."""
    clauses, params = ["TRUE"], {}
    if project_ids is not None:
        clauses.append("c.project_id = ANY(%(projects)s)")
        params["projects"] = project_ids
    task_project = None
    if task_id is not None:
        task_project = project_of_task(task_id)
        if task_project is None:
            raise task_not_found(task_id)
        clauses.append("c.task_id = %(task)s")
        params["task"] = task_id
    if session_id is not None:
        clauses.append("c.session_id = %(session)s")
        params["session"] = session_id
    if paths is not None:
        clauses.append("c.path = ANY(%(paths)s)")
        params["paths"] = [repository_path(p, "") for p in paths]
    if not include_recent:
        clauses.append("c.expires_at > now()")
    holders = holders_where(" AND ".join(clauses), params)
    if task_project is not None:
        # The other tasks' claims on the task's paths: who it contends with.
        mine = sorted({h.path for h in holders})
        if mine:
            holders += holders_where(
                "c.project_id = %(project)s AND c.path = ANY(%(mine)s) "
                "AND c.task_id IS DISTINCT FROM %(task)s" + (
                    "" if include_recent else " AND c.expires_at > now()"),
                {"project": task_project, "mine": mine, "task": task_id})
    return listing(holders)


def listing(holders: list[Holder]) -> dict[str, Any]:
    """A file is one path of one project: the same path in two repositories is two files."""
    tasks_by_file: dict[tuple[str, str], set[str | None]] = {}
    for holder in holders:
        if holder.held:
            tasks_by_file.setdefault((holder.project_id, holder.path), set()).add(
                holder.task_id or holder.session_id)
    contested = {f for f, tasks in tasks_by_file.items() if len(tasks) > 1}
    ordered = sorted(holders, key=lambda h: ((h.project_id, h.path) not in contested,
                                             h.project_id, h.path, not h.held, h.seconds_ago))
    return {"success": True,
            "claims": [{**h.as_dict(), "contested": (h.project_id, h.path) in contested}
                       for h in ordered],
            "contested": sorted({path for _, path in contested}),
            "total": len(ordered), "timestamp": now_iso()}


def live_claim_counts(project_ids: list[str] | None) -> dict[str, int]:
    """For the overview: held claims, files held, and files contested by two tasks."""
    listed = file_claims(project_ids, include_recent=False)
    return {"claims": listed["total"],
            "files": len({(c["projectId"], c["path"]) for c in listed["claims"]}),
            "contested": len({(c["projectId"], c["path"]) for c in listed["claims"]
                              if c["contested"]})}
