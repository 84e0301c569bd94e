"""Backup and restore (spec 13.3.2): `manage.py backup`, then `manage.py restore` into a
fresh database (a real subprocess, as an operator would run it) and over the live one."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import uuid
from pathlib import Path

import psycopg
import pytest
from django.core.management import call_command
from django.db import connection

from foundation.backends import redis_store
from foundation.core.db import qualified
from tests import processes

# Each table's rows as JSON, in a stable order (what must come back identical).
SNAPSHOT_SQL = {
    "task_contexts": "SELECT jsonb_agg(to_jsonb(t) ORDER BY task_id) FROM {} t",
    "context_versions": "SELECT jsonb_agg(to_jsonb(t) ORDER BY task_id, version) FROM {} t",
    "checkpoints": "SELECT jsonb_agg(to_jsonb(t) ORDER BY checkpoint_id) FROM {} t",
    "active_sessions": "SELECT jsonb_agg(to_jsonb(t) ORDER BY session_id) FROM {} t",
}


def snapshot(cursor) -> dict:
    tables = {}
    for table, sql in SNAPSHOT_SQL.items():
        cursor.execute(sql.format(qualified(table)))
        value = cursor.fetchone()[0]
        tables[table] = json.loads(value) if isinstance(value, str) else value
    return tables


def make_history(tools) -> None:
    for task in ("bk-a", "bk-b"):
        tools.ok("create_task", {"taskId": task, "name": f"Backup {task}", "keyFiles": ["k.py"]})
    tools.ok("start_session", {"sessionId": "bk-s", "taskId": "bk-a", "projectDir": "/repo"})
    for phase in ("design", "build"):
        tools.ok("save_context_snapshot", {"taskId": "bk-a", "sessionId": "bk-s",
                                           "updates": {"currentPhase": phase}})
    tools.ok("create_checkpoint", {"label": "before tests", "taskId": "bk-a"})
    tools.ok("create_checkpoint", {"label": "everything"})


@pytest.fixture
def fresh_database():
    name = f"restore_{uuid.uuid4().hex[:12]}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_backup_restores_into_a_fresh_database(tools, settings, tmp_path, fresh_database):
    make_history(tools)
    with connection.cursor() as cursor:
        before = snapshot(cursor)
    assert len(before["context_versions"]) >= 4 and len(before["checkpoints"]) == 2
    archive = tmp_path / "backup.tar.gz"
    call_command("backup", str(archive))
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile("manifest.json"))
    assert {"manifest.json", "database.dump", "files/contexts/task-agents/bk-a.json"} <= set(names)
    for table in ("task_contexts", "context_versions", "checkpoints", "active_sessions"):
        assert manifest["rows"][table] == len(before[table]), table

    # A new machine: empty database, empty file roots, empty Redis.
    redis_store.run(lambda r: r.flushdb())
    contexts, recovery = tmp_path / "new" / "contexts", tmp_path / "new" / "recovery"
    env = processes.service_env(tmp_path, DATABASE_URL=processes.database_url(fresh_database),
                                CONTEXT_DIR=str(contexts), RECOVERY_DIR=str(recovery))
    done = subprocess.run([sys.executable, "manage.py", "restore", str(archive), "--yes"],
                          cwd=processes.ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr

    with (psycopg.connect(processes.database_url(fresh_database)) as restored,
          restored.cursor() as cursor):
        assert snapshot(cursor) == before
        # The versioning trigger came back with the tables.
        cursor.execute(f"UPDATE {qualified('task_contexts')} SET current_phase = 'after' "
                       "WHERE task_id = 'bk-a' RETURNING version")
        assert cursor.fetchone()[0] == before["task_contexts"][0]["version"] + 1
        cursor.execute(f"SELECT count(*) FROM {qualified('context_versions')} "
                       "WHERE task_id = 'bk-a'")
        assert cursor.fetchone()[0] == sum(
            1 for v in before["context_versions"] if v["task_id"] == "bk-a") + 1
        restored.rollback()
    # sync_hot_context rebuilt Redis from the restored rows; the file roots came back.
    version = before["task_contexts"][0]["version"]
    assert redis_store.get_json("context:task:bk-a")["version"] == version
    task_file = json.loads((contexts / "task-agents" / "bk-a.json").read_text())
    assert task_file["version"] == version
    assert (contexts / "_registry.json").exists()
    original_recovery = {p.relative_to(settings.RECOVERY_DIR) for p in
                         Path(settings.RECOVERY_DIR).rglob("*") if p.is_file()}
    assert original_recovery and original_recovery <= {
        p.relative_to(recovery) for p in recovery.rglob("*") if p.is_file()}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_restore_over_the_live_database_brings_the_backed_up_state_back(tools, settings,
                                                                          tmp_path):
    make_history(tools)
    with connection.cursor() as cursor:
        before = snapshot(cursor)
    archive = tmp_path / "backup.tar.gz"
    call_command("backup", str(archive), "--no-files")
    # Work done after the backup: lost by the restore, as it should be.
    tools.ok("save_context_snapshot", {"taskId": "bk-a", "updates": {"currentPhase": "late"}})
    tools.ok("create_task", {"taskId": "bk-late", "name": "after the backup"})
    redis_store.run(lambda r: r.flushdb())
    (settings.CONTEXT_DIR / "task-agents" / "bk-b.json").unlink()

    call_command("restore", str(archive), "--yes", "--no-files")
    with connection.cursor() as cursor:
        assert snapshot(cursor) == before
    # Files and Redis were rebuilt from the restored rows by sync_hot_context.
    version = before["task_contexts"][0]["version"]
    assert redis_store.get_json("context:task:bk-a")["currentPhase"] == "build"
    assert redis_store.get_json("context:task:bk-a")["version"] == version
    rebuilt = json.loads((settings.CONTEXT_DIR / "task-agents" / "bk-b.json").read_text())
    assert rebuilt["taskId"] == "bk-b"
    assert tools.ok("get_unified_context", {"taskId": "bk-a"})["task"]["currentPhase"] == "build"
    assert tools.call("get_unified_context", {"taskId": "bk-late"}).error_code == "E1610"


@pytest.mark.django_db
def test_restore_refuses_what_is_not_a_backup(tmp_path):
    from django.core.management.base import CommandError

    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(b"not a tarball")
    with pytest.raises(CommandError, match="not a readable backup"):
        call_command("restore", str(junk), "--yes")
    with pytest.raises(CommandError, match="no such file"):
        call_command("restore", str(tmp_path / "missing.tar.gz"), "--yes")


@pytest.mark.django_db(transaction=True)
def test_the_scheduled_backup_keeps_the_newest_and_marks_the_job(tools, settings, tmp_path):
    from prometheus_client import REGISTRY

    from orchestrator.celery import periodic_jobs
    from orchestrator.ops.tasks import backup_task

    settings.BACKUP_DIR = str(tmp_path / "backups")
    settings.BACKUP_KEEP = 2
    settings.BACKUP_INTERVAL_SECONDS = 3600
    assert periodic_jobs()["back up"] == {"task": "orchestrator.backup", "schedule": 3600.0}
    older = [tmp_path / "backups" / f"orchestrator-2020010{day}T000000Z.tar.gz" for day in (1, 2)]
    older[0].parent.mkdir()
    for path in older:
        path.write_bytes(b"an older backup")
    tools.ok("create_task", {"taskId": "sched", "name": "scheduled"})

    result = backup_task.apply().get()
    assert result["success"] and result["removed"] == [str(older[0])]
    remaining = sorted(p.name for p in (tmp_path / "backups").iterdir())
    assert remaining == [older[1].name, Path(result["path"]).name]
    assert result["rows"]["task_contexts"] == 1
    stamp = REGISTRY.get_sample_value("session_orchestration_job_last_success_timestamp_seconds",
                                      {"job": "backup"})
    assert stamp is not None and stamp > 0


def test_no_backup_dir_no_scheduled_backup(settings):
    from orchestrator.celery import periodic_jobs

    settings.BACKUP_DIR = ""
    assert "orchestrator.backup" not in {job["task"] for job in periodic_jobs().values()}


@pytest.mark.django_db(transaction=True)
def test_two_backups_named_alike_at_once_both_land_whole(tools, tmp_path, monkeypatch):
    """The scheduled backup and one taken by hand can start in the same instant into the
    same directory: each writes its own partial file and neither replaces the other."""
    from concurrent.futures import ThreadPoolExecutor

    from django.db import connections

    from orchestrator.ops import backup

    tools.ok("create_task", {"taskId": "twin-backup", "name": "twins"})
    monkeypatch.setattr(backup, "archive_name", lambda stamp: "orchestrator-same-instant.tar.gz")
    target = tmp_path / "backups"
    target.mkdir()

    def take(_):
        try:
            return Path(backup.create_backup(target)["path"])
        finally:
            connections.close_all()

    with ThreadPoolExecutor(2) as pool:
        paths = list(pool.map(take, range(2)))
    assert sorted(p.name for p in paths) == ["orchestrator-same-instant-1.tar.gz",
                                             "orchestrator-same-instant.tar.gz"]
    assert sorted(p.name for p in target.iterdir()) == sorted(p.name for p in paths)
    for path in paths:
        assert backup.read_manifest(path)["rows"]["task_contexts"] == 1
        with tarfile.open(path, "r:gz") as archive:
            listed = subprocess.run(
                [str(backup.client_binaries() / "pg_restore"), "--list"],
                input=archive.extractfile(backup.DUMP_NAME).read(), capture_output=True)
        assert listed.returncode == 0 and b"task_contexts" in listed.stdout, listed.stderr
