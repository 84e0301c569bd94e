"""Checkpoint snapshots back to plain JSON (CONTRACT.md: "JSONB columns hold plain JSON
(checkpoint snapshots included), readable with ->>"), compressed by Postgres instead.

1. ``snapshot`` gets column compression lz4 where the server has it (Postgres 14+ built
   with lz4); elsewhere the default (pglz) stays. It is set first, so the rows rewritten
   below are stored with it. Values under about 2 kB are stored inline uncompressed,
   as every JSONB value.
2. Every row stored as ``{"encoding": "zlib+base64", "data": ...}`` (migration 0002) is
   rewritten as ``{"global", "tasks", "checksum", "contentDigest", "taskVersions",
   "originalSize"}`` plus, for a checkpoint of a task, ``taskId`` and ``currentPhase``.
   The stored checksum is kept as it was (a row that no longer matches it must still
   fail its check); a row that cannot be decoded is left as it is, for the periodic check
   to mark corrupt. The storage quota is not checked on the rewrite (the content is the
   same; only its form changes), and the counters are rebuilt afterwards.

Reversible: the reverse compresses the plain rows again as 0002 did and restores the
column's default compression. Frozen: this code, not today's service, is what ran.
"""

import base64
import json
import zlib

from django.conf import settings
from django.db import DatabaseError, migrations, transaction

S = settings.MCP_SCHEMA
I = f"{S}_internal"  # noqa: E741 - the internal schema, as 0001 names it
BATCH = 200
LEGACY_ENCODING = "zlib+base64"
COMPRESSION_LEVEL = 6


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def plain_form(stored, task_id):
    """The plain form of a 0002 row; None when it cannot be decoded."""
    try:
        content = json.loads(zlib.decompress(base64.b64decode(stored["data"], validate=True)))
    except (KeyError, TypeError, ValueError, zlib.error):
        return None
    if not isinstance(content, dict) or not isinstance(content.get("tasks"), dict):
        return None
    tasks = content["tasks"]
    snapshot = {"global": content.get("global"), "tasks": tasks,
                "checksum": stored.get("checksum"),
                "contentDigest": stored.get("contentDigest"),
                "taskVersions": {t: (row or {}).get("version") if isinstance(row, dict)
                                 else None for t, row in tasks.items()},
                "originalSize": len(canonical_json(
                    {"global": content.get("global"), "tasks": tasks}).encode())}
    if task_id and isinstance(tasks.get(task_id), dict):
        snapshot["taskId"] = task_id
        snapshot["currentPhase"] = tasks[task_id].get("current_phase")
    return snapshot


def compressed_form(snapshot):
    """The 0002 form of a plain row (the reverse)."""
    content = {"global": snapshot.get("global"), "tasks": snapshot.get("tasks") or {}}
    text = canonical_json(content).encode()
    packed = base64.b64encode(zlib.compress(text, COMPRESSION_LEVEL)).decode("ascii")
    return {"encoding": LEGACY_ENCODING, "data": packed,
            "checksum": snapshot.get("checksum"),
            "contentDigest": snapshot.get("contentDigest"),
            "taskVersions": snapshot.get("taskVersions") or {},
            "originalSize": len(text), "compressedSize": len(packed)}


def set_lz4(cursor):
    """lz4 column compression when this server has it; False (pglz stays) otherwise."""
    cursor.execute("SELECT current_setting('server_version_num')::int")
    if cursor.fetchone()[0] < 140000:
        return False
    try:
        with transaction.atomic():  # a savepoint: a server without lz4 refuses the ALTER
            cursor.execute(f'ALTER TABLE "{S}".checkpoints ALTER COLUMN snapshot '
                           "SET COMPRESSION lz4")
    except DatabaseError:
        return False
    return True


def rewrite(cursor, select_sql, convert):
    cursor.execute("SELECT set_config('orchestrator.storage_quota_bytes', '0', true)")
    last = ""
    while True:
        cursor.execute(select_sql, [last, BATCH])
        rows = cursor.fetchall()
        if not rows:
            break
        for checkpoint_id, task_id, stored in rows:
            if isinstance(stored, str):
                stored = json.loads(stored)
            new = convert(stored, task_id)
            if new is not None:
                cursor.execute(f'UPDATE "{S}".checkpoints SET snapshot = %s::jsonb '
                               "WHERE checkpoint_id = %s", [json.dumps(new), checkpoint_id])
        last = rows[-1][0]
    cursor.execute(f'SELECT "{I}".recount_storage_usage()')


def forward(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        set_lz4(cursor)
        rewrite(cursor, f'SELECT checkpoint_id, task_id, snapshot FROM "{S}".checkpoints '
                        "WHERE snapshot->>'encoding' = 'zlib+base64' AND checkpoint_id > %s "
                        "ORDER BY checkpoint_id LIMIT %s",
                plain_form)


def backward(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        rewrite(cursor, f'SELECT checkpoint_id, task_id, snapshot FROM "{S}".checkpoints '
                        "WHERE NOT snapshot ? 'encoding' AND jsonb_typeof(snapshot->'tasks') "
                        "= 'object' AND checkpoint_id > %s ORDER BY checkpoint_id LIMIT %s",
                lambda stored, task_id: compressed_form(stored))
        cursor.execute("SELECT current_setting('server_version_num')::int")
        if cursor.fetchone()[0] >= 140000:
            cursor.execute(f'ALTER TABLE "{S}".checkpoints ALTER COLUMN snapshot '
                           "SET COMPRESSION DEFAULT")


class Migration(migrations.Migration):

    dependencies = [("contexts", "0006_critical_keys")]

    operations = [migrations.RunPython(forward, backward)]
