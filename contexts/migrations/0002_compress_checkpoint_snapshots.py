"""Store existing checkpoint snapshots compressed (seed 003), as new ones are.

Rows keep their checksum and content digest; only the storage form changes, so a restore
verifies them exactly as before. Reversible: the reverse writes the clear form back.
"""

from django.db import migrations

BATCH = 200


def compress(apps, schema_editor):
    from contexts.services.checkpoints import pack_snapshot

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
    from contexts.services.checkpoints import unpack_snapshot

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
