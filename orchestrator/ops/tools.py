"""The orchestrator's own operations, for in-process callers only (beat, cron): retention
(``prune``) and ``backup``. Restore is a command of its own: it replaces the database
the registry records its calls in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import TIMESTAMP, array, boolean, integer, obj, string
from orchestrator.ops import backup, retention

COUNTS = {"type": "object", "additionalProperties": {"type": "integer"}}

register(Tool(
    name="prune",
    description=(
        "Apply the retention policy (RETENTION_* settings): delete the context versions, "
        "checkpoints and session events it no longer keeps, in batches; dryRun only counts "
        "them; it removes sessions over for RETENTION_EVENT_DAYS with their tool history "
        "(sessions) and handoff notes replaced that long ago (handoffs). It also drops "
        "spent file claims and old notices (claims, notices) and "
        "archives the backup files of archived and long-completed tasks (taskFiles). Beat "
        "runs it every RETENTION_INTERVAL_SECONDS; manage.py prune runs it once."
    ),
    input_schema=obj({"dryRun": boolean(default=False)}),
    output_schema=obj({"success": boolean(), "dryRun": boolean(), "versions": integer(),
                       "versionsByTask": COUNTS, "checkpoints": array(string()),
                       "events": integer(), "eventsBySession": COUNTS,
                       "sessionOwners": integer(), "claims": integer(),
                       "notices": integer(),
                       "taskFiles": array(string(), "Tasks whose backup file was archived"),
                       "sessions": integer("Sessions over for RETENTION_EVENT_DAYS, removed "
                                           "with their tool history"),
                       "handoffs": integer("Handoff notes replaced that long ago"),
                       "timestamp": TIMESTAMP},
                      ["success", "dryRun", "versions", "checkpoints", "events", "timestamp"]),
    handler=lambda args, ctx: {"success": True,
                               **retention.prune(dry_run=args.get("dryRun", False)).as_dict(),
                               "timestamp": now_iso()},
    internal=True,
))


def _backup(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    target = Path(args.get("target") or settings.BACKUP_DIR or "backups")
    keep = args.get("keep", 0)
    try:
        if not target.suffix and not target.exists():
            target.mkdir(parents=True)
        result = backup.create_backup(target, include_files=args.get("includeFiles", True))
        removed = backup.prune_backups(target, keep) if keep > 0 and target.is_dir() else []
    except OSError as exc:
        raise OrchestratorError("E1651", f"Backup target {target}: {exc}",
                                {"target": str(target)}) from exc
    return {"success": True, "path": result["path"], "bytes": result["bytes"],
            "rows": result["rows"], "removed": [str(path) for path in removed],
            "timestamp": now_iso()}


register(Tool(
    name="backup",
    description=(
        "Write one .tar.gz holding a pg_dump of the database, CONTEXT_DIR and RECOVERY_DIR "
        "(target: an archive path, or a directory to put a timestamped one in; default "
        "BACKUP_DIR); with keep > 0 and a directory, delete all but its newest keep "
        "archives. Beat runs it every BACKUP_INTERVAL_SECONDS when BACKUP_DIR is set."
    ),
    input_schema=obj({"target": string(max_length=4096), "includeFiles": boolean(default=True),
                      "keep": integer(minimum=0, maximum=10000)}),
    output_schema=obj({"success": boolean(), "path": string(), "bytes": integer(),
                       "rows": COUNTS, "removed": array(string()), "timestamp": TIMESTAMP},
                      ["success", "path", "bytes", "rows", "removed", "timestamp"]),
    handler=_backup,
    internal=True,
))
