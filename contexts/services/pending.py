"""Saves that survive a Postgres outage (``RECOVERY_DIR/.pending-saves.json``): an
agent's acknowledged save is never lost, even while the database is away.

While Postgres is unreachable, a network client's ``save_context_snapshot`` is held: its
validated input and who sent it are appended to ``.pending-saves.json`` (fsynced before
the answer) and the call answers 202 with ``success: true``, ``pending: true``, the held
save's ``pendingSaveId``, ``version: null`` and ``savedTo`` ``{database: false, redis:
false, file: true}``: the spec's own answer for a save that reached some backends, not an
error, so a client does not send it again (a retried save would be a second version).

When Postgres is back, the held saves are replayed in the order they were held, each
through the registry as its sender's call (same token name, scope and projects: a save
the sender could not make is not made), by

- the next save of any process, before its own write (a later save must not be overtaken
  by an earlier one: the held saves go first). Checking costs one ``stat`` per save;
- the periodic job ``replay_pending_saves`` (beat, every HEARTBEAT_INTERVAL_MS, and
  ``manage.py replay_pending_saves``), so that held saves do not wait for another save.

Not at start-up: a web worker starting does not know Postgres is back, and the two above
cover every case within a heartbeat interval.

Exactly once: each held save has an id, recorded (``foundation.core.models.ReplayedCall``)
in the transaction that applies it; a replay skips ids already recorded, so a replay that
crashed after applying and before rewriting the file, or two replays at once, apply each
save once. A held save the service refuses on replay (the task was deleted meanwhile, a
lock of another session: E1610, E1613, ...) is moved to ``.pending-saves.rejected.json``
with the error, logged, and not tried again; the others go on.

Several web workers (processes) and their tool threads write the file: every read-modify-
write of it holds an exclusive ``flock`` on a lock file beside it (``files.exclusive``,
the standard library's fcntl: one lock per open file, so it excludes threads of one
process as well as other processes, and the kernel releases it if the holder dies), and
the file itself is replaced atomically (temp file, fsync, rename).

Limit: a connection lost while COMMIT was on its way leaves it unknown whether the save
committed; it is held, and a replay of a save that did commit applies the same updates a
second time (a second version with the same content).
"""

from __future__ import annotations

import logging
import os
import uuid
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import InterfaceError, OperationalError, transaction

from foundation.backends import files
from foundation.core.errors import OrchestratorError
from foundation.core.models import ReplayedCall
from foundation.core.stamps import now_iso
from foundation.core.tools import ToolContext, call_tool
from foundation.observability import metrics

logger = logging.getLogger("orchestrator.contexts")

PENDING_FILE = ".pending-saves.json"
REJECTED_FILE = ".pending-saves.rejected.json"
TOOL = "save_context_snapshot"
# The transport replayed calls run as: a network client's rules, but no holding again.
REPLAY_TRANSPORT = "replay"
PENDING_MESSAGE = ("PostgreSQL is unreachable: the save is held in "
                   "RECOVERY_DIR/.pending-saves.json and will be applied, in order and once, "
                   "when it is back")


def pending_path() -> Path:
    return files.recovery_dir() / PENDING_FILE


def _read(path: Path) -> dict[str, Any]:
    data = files.read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("saves"), list):
        data = {"version": 1, "saves": []}
    return data


def hold_save(args: dict[str, Any], context: ToolContext) -> dict[str, Any] | None:
    """``save_context_snapshot``'s answer while Postgres is unreachable: the save appended
    to the pending file; None when the file cannot be written either (the call then fails
    with E1654, as before)."""
    entry = {"id": f"held-{uuid.uuid4().hex}", "tool": TOOL, "arguments": args,
             "caller": {"actor": context.actor, "scope": context.scope,
                        "projects": (None if context.projects is None
                                     else sorted(context.projects)),
                        "project": context.project},
             "heldAt": now_iso()}
    path = pending_path()
    try:
        with files.exclusive(path):
            data = _read(path)
            data["saves"].append(entry)
            data["updatedAt"] = entry["heldAt"]
            files.write_json_atomic(path, data)  # fsynced before the answer says "held"
    except OSError as exc:
        metrics.backend_failures_total.labels("file", "pending_saves").inc()
        logger.error("save of %s not held: the pending-saves file cannot be written: %s",
                     args.get("taskId"), exc)
        return None
    position = len(data["saves"])
    logger.warning("save held while PostgreSQL is unreachable", extra={
        "taskId": args.get("taskId"), "pendingSaveId": entry["id"], "position": position})
    return {"success": True, "taskId": args["taskId"], "version": None, "pending": True,
            "pendingSaveId": entry["id"], "pendingPosition": position,
            "savedTo": {"database": False, "redis": False, "file": True},
            "message": PENDING_MESSAGE, "timestamp": entry["heldAt"]}


def replay_if_any(context: ToolContext) -> None:
    """Before a save: apply the held saves first, when there are any (one ``stat``
    otherwise). Not inside a replay (its saves are the ones being applied)."""
    # The path joined as a string: this runs with every save (pending_path() builds a Path).
    if context.transport != REPLAY_TRANSPORT and os.path.exists(
            os.path.join(settings.RECOVERY_DIR, PENDING_FILE)):
        replay_pending_saves()


def replay_pending_saves() -> dict[str, Any]:
    """Apply the held saves in order; stop at the first that finds Postgres still down
    (it and the ones after it stay held). {applied, skipped, rejected, remaining}."""
    path = pending_path()
    report: dict[str, Any] = {"success": True, "applied": [], "skipped": [],
                              "rejected": [], "remaining": 0}
    if not os.path.exists(path):
        return report
    with files.exclusive(path):
        data = _read(path)
        saves, done, rejected = data["saves"], 0, []
        for entry in saves:
            try:
                report[_apply(entry)].append(entry["id"])
            except _StillDown:
                break
            except OrchestratorError as exc:
                rejected.append({**entry, "rejectedAt": now_iso(), "error": exc.to_dict()})
                report["rejected"].append(entry["id"])
                logger.error("held save %s of %s refused on replay: %s", entry["id"],
                             entry["arguments"].get("taskId"), exc)
            done += 1
        if rejected:
            _append_rejected(rejected)
        remaining = saves[done:]
        report["remaining"] = len(remaining)
        if remaining:
            if done:
                files.write_json_atomic(path, {**data, "saves": remaining,
                                               "updatedAt": now_iso()})
        else:
            path.unlink(missing_ok=True)
    if report["applied"] or report["rejected"]:
        logger.info("held saves replayed", extra={
            "applied": len(report["applied"]), "skipped": len(report["skipped"]),
            "rejected": len(report["rejected"]), "remaining": report["remaining"]})
    return report


class _StillDown(Exception):
    pass


def _apply(entry: dict[str, Any]) -> str:
    """Apply one held save with its id recorded in the same transaction: "applied", or
    "skipped" when its id was recorded before. _StillDown when Postgres is unreachable;
    OrchestratorError when the service refuses the save."""
    caller = entry.get("caller") or {}
    context = ToolContext(REPLAY_TRANSPORT, actor=caller.get("actor") or "",
                          scope=caller.get("scope"),
                          projects=(None if caller.get("projects") is None
                                    else frozenset(caller["projects"])),
                          project=caller.get("project"))
    try:
        with transaction.atomic():
            if not ReplayedCall.mark_applied(entry["id"], entry["tool"], entry.get("heldAt")):
                return "skipped"
            call_tool(entry["tool"], entry["arguments"], context)
    except (OperationalError, InterfaceError) as exc:
        raise _StillDown from exc
    except OrchestratorError as exc:
        if exc.http_status == 503:  # the registry's answer for an unreachable database
            raise _StillDown from exc
        raise
    return "applied"


def _append_rejected(entries: list[dict[str, Any]]) -> None:
    path = files.recovery_dir() / REJECTED_FILE
    with files.exclusive(path):
        kept = files.read_json(path)
        kept = kept if isinstance(kept, list) else []
        files.write_json_atomic(path, kept + entries)
