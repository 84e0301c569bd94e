"""The periodic checkpoint check (a checkpoint's status is active, archived or corrupt):
every snapshot is read back and verified against its checksum, so a
checkpoint that went bad is marked corrupt, logged and shown on the console before anyone
tries to restore it (rollback_to refuses it: E1624).

Run by the Celery beat job ``checkpoint check`` (CHECKPOINT_CHECK_INTERVAL_SECONDS) and by
``manage.py check_checkpoints``. A checkpoint that verifies again (repaired from a backup)
goes back to active; an archived one stays archived whatever its content (archiving is an
operator's choice), though a corrupt one is marked so.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.db import connection, transaction

from contexts.models import CheckpointDetails
from contexts.services.checkpoints import integrity_problem
from foundation.core.db import qualified
from foundation.core.errors import checkpoint_not_found
from foundation.core.stamps import now_iso

logger = logging.getLogger("orchestrator.contexts")

BATCH = 200
DETAILS = connection.ops.quote_name(CheckpointDetails._meta.db_table)

# One batch's verdicts in one statement: a row per checkpoint, created for checkpoints made
# before the details table (project from the checkpoint, no tags, agent unknown).
_MARK_SQL = f"""
INSERT INTO {DETAILS} AS d
  (checkpoint_id, project_id, tags, status, status_reason, checked_at)
SELECT c.checkpoint_id, c.project_id, '[]'::jsonb, v.status, v.reason, now()
FROM unnest(%s::text[], %s::text[], %s::text[]) AS v(checkpoint_id, status, reason)
JOIN {qualified('checkpoints')} c ON c.checkpoint_id = v.checkpoint_id
ON CONFLICT (checkpoint_id) DO UPDATE SET
  status = CASE WHEN EXCLUDED.status = 'corrupt' THEN 'corrupt'
                WHEN d.status = 'archived' THEN 'archived' ELSE 'active' END,
  status_reason = EXCLUDED.status_reason, checked_at = EXCLUDED.checked_at
"""


def check_checkpoints(batch_size: int = BATCH) -> dict[str, Any]:
    """Verify every checkpoint; answer how many were checked, the corrupt ones and those
    that turned corrupt (or verified again) in this run."""
    checked = 0
    corrupt: list[str] = []
    newly_corrupt: list[str] = []
    repaired: list[str] = []
    last = ""
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT c.checkpoint_id, c.snapshot, d.status FROM {qualified('checkpoints')} c "
                f"LEFT JOIN {DETAILS} d USING (checkpoint_id) "
                "WHERE c.checkpoint_id > %s ORDER BY c.checkpoint_id LIMIT %s",
                [last, batch_size])
            rows = cursor.fetchall()
        if not rows:
            break
        ids, statuses, reasons = [], [], []
        for checkpoint_id, snapshot, before in rows:
            if isinstance(snapshot, str):
                snapshot = json.loads(snapshot)
            problem = integrity_problem(snapshot)
            ids.append(checkpoint_id)
            statuses.append(CheckpointDetails.CORRUPT if problem else CheckpointDetails.ACTIVE)
            reasons.append(problem)
            if problem:
                corrupt.append(checkpoint_id)
                if before != CheckpointDetails.CORRUPT:
                    newly_corrupt.append(checkpoint_id)
                    logger.error("Checkpoint corrupt", extra={
                        "checkpointId": checkpoint_id, "reason": problem})
            elif before == CheckpointDetails.CORRUPT:
                repaired.append(checkpoint_id)
                logger.warning("Checkpoint verified again", extra={
                    "checkpointId": checkpoint_id})
        # A checkpoint deleted meanwhile simply has no row (the join drops it).
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(_MARK_SQL, [ids, statuses, reasons])
        checked += len(rows)
        last = rows[-1][0]
    with transaction.atomic(), connection.cursor() as cursor:
        # Rows of checkpoints deleted since (retention, SQL): no foreign key removes them.
        cursor.execute(f"DELETE FROM {DETAILS} d WHERE NOT EXISTS (SELECT 1 FROM "
                       f"{qualified('checkpoints')} c WHERE c.checkpoint_id = d.checkpoint_id)")
    return {"success": True, "checked": checked, "corrupt": corrupt,
            "newlyCorrupt": newly_corrupt, "repaired": repaired, "timestamp": now_iso()}


_ARCHIVE_SQL = f"""
INSERT INTO {DETAILS} AS d (checkpoint_id, project_id, tags, status)
SELECT c.checkpoint_id, c.project_id, '[]'::jsonb, %(status)s
FROM {qualified('checkpoints')} c WHERE c.checkpoint_id = ANY(%(ids)s)
ON CONFLICT (checkpoint_id) DO UPDATE SET
  status = CASE WHEN d.status = 'corrupt' THEN 'corrupt' ELSE EXCLUDED.status END
RETURNING d.checkpoint_id, d.status
"""


def archive_checkpoints(checkpoint_ids: list[str], archived: bool = True) -> dict[str, Any]:
    """An operator sets checkpoints aside (``archived``: still listed and restorable, shown
    as archived) or makes them active again. A corrupt checkpoint stays corrupt: only the
    check, verifying it again, clears that. E1622 when one does not exist."""
    ids = list(dict.fromkeys(checkpoint_ids))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_ARCHIVE_SQL, {"ids": ids, "status": CheckpointDetails.ARCHIVED
                                      if archived else CheckpointDetails.ACTIVE})
        statuses = dict(cursor.fetchall())
        missing = [i for i in ids if i not in statuses]
        if missing:
            raise checkpoint_not_found(missing[0])  # rolls the others back too
    return {"success": True, "statuses": {i: statuses[i] for i in ids},
            "timestamp": now_iso()}
