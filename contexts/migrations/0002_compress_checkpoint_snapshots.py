"""Store existing checkpoint snapshots compressed, as new ones are.

Rows keep their checksum and content digest; only the storage form changes, so a restore
verifies them exactly as before. Reversible: the reverse writes the clear form back.
The storage form is frozen here as this migration wrote it, not taken from today's code.
"""

import base64
import hashlib
import json
import zlib

from django.db import migrations

BATCH = 200
SNAPSHOT_ENCODING = "zlib+base64"
COMPRESSION_LEVEL = 6


def canonical_sha256(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def pack_snapshot(global_row, tasks, digest):
    """The stored (compressed) form of a checkpoint's content."""
    content = {"global": global_row, "tasks": tasks}
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), default=str).encode()
    packed = base64.b64encode(zlib.compress(text, COMPRESSION_LEVEL)).decode("ascii")
    return {"encoding": SNAPSHOT_ENCODING, "data": packed,
            "checksum": canonical_sha256({"global": global_row, "tasks": tasks}),
            "contentDigest": digest,
            "taskVersions": {t: row.get("version") for t, row in tasks.items()},
            "originalSize": len(text), "compressedSize": len(packed)}


def unpack_snapshot(stored):
    """``{"global", "tasks", "checksum", "contentDigest"}`` from either stored form.

    Raises ValueError when the stored data cannot be decoded (a corrupt checkpoint).
    """
    if not isinstance(stored, dict):
        raise ValueError("snapshot is not an object")
    if stored.get("encoding") is None:  # written before snapshots were compressed
        return stored
    if stored["encoding"] != SNAPSHOT_ENCODING:
        raise ValueError(f"unknown snapshot encoding {stored['encoding']!r}")
    try:
        content = json.loads(zlib.decompress(base64.b64decode(stored["data"], validate=True)))
    except (KeyError, TypeError, ValueError, zlib.error) as exc:
        raise ValueError(f"snapshot data cannot be decoded: {exc}") from exc
    if not isinstance(content, dict):
        raise ValueError("snapshot content is not an object")
    return {"global": content.get("global"), "tasks": content.get("tasks"),
            "checksum": stored.get("checksum"), "contentDigest": stored.get("contentDigest")}


def compress(apps, schema_editor):
    Checkpoint = apps.get_model("contexts", "Checkpoint")
    clear = Checkpoint.objects.exclude(snapshot__has_key="encoding")
    for checkpoint in clear.iterator(chunk_size=BATCH):
        snapshot = checkpoint.snapshot
        if not isinstance(snapshot, dict):
            continue  # unreadable already: left for the restore check to report
        packed = pack_snapshot(snapshot.get("global"), snapshot.get("tasks") or {},
                               snapshot.get("contentDigest"))
        # Keep the stored checksum: a row that no longer matches it must still fail.
        packed["checksum"] = snapshot.get("checksum")
        Checkpoint.objects.filter(pk=checkpoint.pk).update(snapshot=packed)


def decompress(apps, schema_editor):
    Checkpoint = apps.get_model("contexts", "Checkpoint")
    for checkpoint in Checkpoint.objects.filter(snapshot__has_key="encoding").iterator(
            chunk_size=BATCH):
        try:
            content = unpack_snapshot(checkpoint.snapshot)
        except ValueError:
            continue
        Checkpoint.objects.filter(pk=checkpoint.pk).update(snapshot=content)


class Migration(migrations.Migration):

    dependencies = [("contexts", "0001_initial")]

    operations = [migrations.RunPython(compress, decompress)]
