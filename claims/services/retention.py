"""What retention prunes of the claims app (registered in ClaimsConfig.ready): the file
claims that count for no one any more (their session is over or gone, or they lapsed
longer than FILE_CLAIM_RECENT_SECONDS ago) with no overlap left to record."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection, transaction

from claims.services.claimants import CLAIMS_TABLE
from foundation.core.db import qualified
from foundation.core.retention import RetentionPolicy


def prune(policy: RetentionPolicy, dry_run: bool) -> dict[str, Any]:
    if dry_run:
        return {}
    live = "'active', 'compacted'"
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {CLAIMS_TABLE} c WHERE cardinality(c.overlaps_pending) = 0 AND ("
            "c.released_at IS NOT NULL "
            "OR c.expires_at < now() - make_interval(secs => %s) "
            f"OR NOT EXISTS (SELECT 1 FROM {qualified('active_sessions')} s "
            f"WHERE s.session_id = c.session_id AND s.status IN ({live})))",
            [settings.FILE_CLAIM_RECENT_SECONDS])
        return {"claims": cursor.rowcount}
