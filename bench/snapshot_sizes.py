"""Stored size of checkpoint snapshots: plain JSONB (since issue 40) against the zlib+base64
text inside JSONB that migration contexts/0002 stored, on the same content, as Postgres
keeps them (TOAST, the snapshot column's compression), read with pg_column_size.

    .venv/bin/python -m orchestrator.ops.launcher --temp -- .venv/bin/python -m bench.snapshot_sizes

The old form comes from migration 0007's frozen ``compressed_form`` (its reverse).
"""

from __future__ import annotations

import importlib
import json
import tempfile

from bench.common import setup_django

SIZES = {"small": (5, 3, 5), "medium": (50, 20, 60), "large": (200, 100, 400)}


def main() -> None:
    setup_django()
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from contexts.models import Checkpoint
    from contexts.services import checkpoints
    from contexts.services.tasks import create_task
    from contexts.services.write import write_task
    from foundation.core.db import qualified

    legacy = importlib.import_module("contexts.migrations.0007_plain_checkpoint_snapshots")
    call_command("migrate", verbosity=0)
    settings.CONTEXT_DIR = tempfile.mkdtemp(prefix="snapshot-sizes-")
    table = qualified("checkpoints")
    with connection.cursor() as cursor:
        cursor.execute("SELECT attcompression FROM pg_attribute WHERE attrelid = "
                       f"'{table}'::regclass AND attname = 'snapshot'")
        compression = {"l": "lz4", "p": "pglz"}.get(cursor.fetchone()[0], "default (pglz)")
        cursor.execute("CREATE TEMP TABLE legacy_snapshots (name text, snapshot jsonb)")
        if compression == "lz4":
            cursor.execute("ALTER TABLE legacy_snapshots ALTER COLUMN snapshot "
                           "SET COMPRESSION lz4")
    print(f"snapshot column compression: {compression}")
    print(f"{'task':8} {'content B':>10} {'plain stored B':>15} {'old stored B':>13} "
          f"{'plain/old':>9}")
    for name, (files, decisions, notes) in SIZES.items():
        task_id = f"sizes-{name}"
        create_task(task_id, {"name": f"Task {name}", "status": "in_progress",
                              "description": "Implement the parser and its recovery. " * 4})
        write_task(task_id, {
            "keyFiles": [f"src/module_{i}/file_{i}.py" for i in range(files)],
            "technicalDecisions": [f"Decision {i}: approach {i}, the benchmark showed it "
                                   "is faster" for i in range(decisions)],
            "immediateContext": {"workingOn": "parser", "nextStep": "error recovery",
                                 "notes": " ".join(f"note {i} about the parser state"
                                                   for i in range(notes))}},
            change_type="manual")
        made = checkpoints.create_checkpoint(f"sizes {name}", task_id=task_id)
        row = Checkpoint.objects.get(checkpoint_id=made["checkpointId"])
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO legacy_snapshots VALUES (%s, %s::jsonb)",
                           [name, json.dumps(legacy.compressed_form(row.snapshot))])
            cursor.execute(f"SELECT pg_column_size(snapshot) FROM {table} "
                           "WHERE checkpoint_id = %s", [row.checkpoint_id])
            plain = cursor.fetchone()[0]
            cursor.execute("SELECT pg_column_size(snapshot) FROM legacy_snapshots "
                           "WHERE name = %s", [name])
            old = cursor.fetchone()[0]
        print(f"{name:8} {row.snapshot['originalSize']:>10} {plain:>15} {old:>13} "
              f"{plain / old:>9.2f}")


if __name__ == "__main__":
    main()
