"""The save's floor: the work a save promises, done alone, through the same drivers and
servers the bench measures us on (issue 24).

One ``save_context_snapshot`` of the active task promises (Postgres, then Redis, then files; bench/PROFILE.md):
Postgres first, a version row saying who and why; then Redis, the task key and the hot
key; then the task file and the hot file. ``Floor.save`` does exactly that and nothing
else, written plainly:

- Postgres: one ``UPDATE task_contexts ... RETURNING *`` in autocommit on Django's own
  psycopg 3 connection, prepared (as our fast path's statement is), handing who and why
  to the version trigger with ``set_config`` in the same statement. The same triggers
  fire (updated_at, version number, version row, graph outbox), on the same row;
- Redis: one pipeline through the same redis-py client (``redis_store.client()``),
  both keys written with the same conditional script our cache uses (a cached copy is
  never replaced by an older version: part of the cache's promise), values of about the
  same size (the row encoded as JSON). Keys of their own (``floor:``), so that the floor
  never serves a reader;
- files: for each of the two files, a temp file in the same directory, write, rename
  over the target (``files.write_text_atomic``'s recipe) on the same file system, with
  the same durability choice: no fsync on the request path, the files and their
  directory fsynced by a background thread INDEX_FILE_DELAY_MS later.

What ours does beyond it is our own: validation, the tool registry (access, tracing,
metrics, tool history hook), the representation of the answers and files, logging, the
lock rule's guard and the before-values in the statement, the file lock and the version
check of the task file.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# The same statement shape as contexts.services.write's fast path, without what the
# floor does not promise (the lock rule's guard, the old values, is_active).
_FLOOR_SQL = """
UPDATE {tasks} t SET immediate_context = %s, current_phase = %s
FROM (SELECT set_config('orchestrator.change_type', %s, true)
             || set_config('orchestrator.change_summary', %s, true)
             || set_config('orchestrator.session_id', %s, true)
             || set_config('orchestrator.created_by', %s, true) AS change_context) ctx
WHERE t.task_id = %s
RETURNING t.*
"""
HOT_COLUMNS = ("task_id", "name", "status", "current_phase", "iteration", "immediate_context",
               "key_files", "resume_prompt", "updated_at", "version")


class DelayedFsync:
    """fsync the files written, and their directory, ``delay`` seconds after a burst
    (what foundation.backends.files.sync_writer does for ours)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.pending: set[Path] = set()
        self.lock = threading.Lock()
        self.stale = threading.Event()
        self.thread: threading.Thread | None = None
        self.stopped = False

    def request(self, *paths: Path) -> None:
        with self.lock:
            self.pending.update(paths)
        self.stale.set()
        if self.thread is None:
            self.thread = threading.Thread(target=self._run, daemon=True, name="floor-fsync")
            self.thread.start()

    def _run(self) -> None:
        while not self.stopped:
            if not self.stale.wait(timeout=0.5):
                continue
            time.sleep(self.delay)
            self.stale.clear()
            with self.lock:
                paths, self.pending = self.pending, set()
            for target in [*paths, *{p.parent for p in paths}]:
                with contextlib.suppress(FileNotFoundError):  # the run's files removed at exit
                    fd = os.open(target, os.O_RDONLY)
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)

    def stop(self) -> None:
        self.stopped = True


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    os.replace(tmp, path)


class Floor:
    """``save(client, i)``: the floor of one save of task ``task_id`` (``files``: with the
    two file writes)."""

    def __init__(self, task_id: str, context: str, *, files: bool = True) -> None:
        from django.conf import settings

        from contexts.services.cache import SET_IF_NOT_OLDER_LUA
        from foundation.backends import redis_store
        from foundation.core.db import qualified

        self.task_id, self.context, self.files = task_id, context, files
        self.sql = _FLOOR_SQL.format(tasks=qualified("task_contexts"))
        self.script = SET_IF_NOT_OLDER_LUA
        self.redis = redis_store.client()
        self.task_key = redis_store.key("floor", "task", task_id)
        self.hot_key = redis_store.key("floor", "hot")
        root = Path(settings.CONTEXT_DIR) / "bench-floor"
        (root / "task-agents").mkdir(parents=True, exist_ok=True)
        self.task_path = root / "task-agents" / f"{task_id}.json"
        self.hot_path = root / "_hot_context.json"
        self.fsync = DelayedFsync(settings.INDEX_FILE_DELAY_MS / 1000)

    def save(self, client: int, i: int) -> None:
        import psycopg
        from django.db import connection
        from psycopg.types.json import Jsonb

        connection.ensure_connection()
        with psycopg.Cursor(connection.connection) as cursor:
            cursor.execute(self.sql, [
                Jsonb({"workingOn": f"{self.context}{i}", "nextStep": "bench"}),
                f"phase {i % 50}", "manual", "", "", "bench", self.task_id], prepare=True)
            row = dict(zip([c.name for c in cursor.description], cursor.fetchone(),
                           strict=True))
        task = json.dumps(row, default=str)
        hot = json.dumps({c: row[c] for c in HOT_COLUMNS}, default=str)
        pipe = self.redis.pipeline(transaction=False)
        pipe.eval(self.script, 1, self.task_key, task, row["version"], self.task_id, 3600)
        pipe.eval(self.script, 1, self.hot_key, hot, row["version"], self.task_id, 3600)
        pipe.execute()
        if self.files:
            write_atomic(self.task_path, task)
            write_atomic(self.hot_path, hot)
            self.fsync.request(self.task_path, self.hot_path)

    def close(self) -> None:
        self.fsync.stop()


def interleaved(variants: dict[str, Callable[[int, int], Any]], *, requests: int,
                blocks: int, run: Callable[..., tuple[list[float], float]],
                before: dict[str, Callable[[], None]] | None = None
                ) -> dict[str, list[tuple[list[float], float]]]:
    """Measure each variant ``requests`` times in all, 1 client, in ``blocks`` rounds that
    take the variants in turn (the order rotating each round), so that a neighbour's burst
    on a shared machine lands on all of them alike. ``run(operation, clients, requests)``
    times one block: (samples, wall). ``before[name]()`` runs before each of its blocks
    (a setting to flip). Returns {variant: [(samples, wall) per block]}."""
    names = list(variants)
    done: dict[str, list[tuple[list[float], float]]] = {name: [] for name in names}
    per_block = max(1, requests // blocks)
    for block in range(blocks):
        shift = block % len(names)
        for name in names[shift:] + names[:shift]:
            if before and name in before:
                before[name]()
            done[name].append(run(variants[name], 1, per_block))
    return done


def median_of_block_p50s(blocks: list[tuple[list[float], float]]) -> float:
    """Seconds: the median over blocks of each block's median."""
    return statistics.median(statistics.median(samples) for samples, _ in blocks)
