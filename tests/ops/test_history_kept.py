"""Issue 40: the full history is kept by default (spec 000 §8.3.3, the audit trail is
``context_versions``); trimming is the operator's explicit choice (RETENTION_KEEP_VERSIONS),
and a bad RETENTION_* value stops start-up with E1690 naming the setting.

Transactional: retention commits batch by batch.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection, transaction

from foundation.config import ConfigError, load_settings
from foundation.core.db import qualified
from orchestrator.ops.tasks import retention_task

ROOT = Path(__file__).resolve().parents[2]
SAVES = 10_000


def saved_many_times(tools, task_id: str, saves: int, days_ago: int) -> None:
    """``saves`` versions written by the real trigger: create_task is the first, then one
    statement (a DO block) runs ``saves - 1`` UPDATEs of the row, each versioned by the
    trigger as an agent's save is, each committed (one transaction would walk an ever
    longer chain of dead row versions: quadratic). Then the versions are made ``days_ago``
    days old: the immutability guard is a trigger, so a test-only replica role writes
    past it."""
    tools.ok("create_task", {"taskId": task_id, "name": task_id})
    with connection.cursor() as cursor:
        cursor.execute("SET synchronous_commit = off")  # a test's data: no flush per commit
        cursor.execute(f"""
            DO $$ BEGIN
              FOR i IN 1..{saves - 1} LOOP
                UPDATE {qualified('task_contexts')} SET iteration = i
                WHERE task_id = '{task_id}';
                COMMIT;
              END LOOP;
            END $$""")
        cursor.execute("RESET synchronous_commit")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(f"UPDATE {qualified('context_versions')} SET created_at = now() - "
                       "make_interval(days => %s) WHERE task_id = %s", [days_ago, task_id])


def version_count(task_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), max(version) FROM {qualified('context_versions')} "
                       "WHERE task_id = %s", [task_id])
        count, newest = cursor.fetchone()
    return count if newest == count else -1


@pytest.mark.django_db(transaction=True)
def test_ten_thousand_saves_keep_ten_thousand_versions_by_default(tools):
    saved_many_times(tools, "hist-10k", SAVES, days_ago=60)
    assert version_count("hist-10k") == SAVES
    result = retention_task(transport="command")  # the beat job, default settings
    assert result["success"] is True and result["versions"] == 0
    assert version_count("hist-10k") == SAVES


@pytest.mark.django_db(transaction=True)
def test_trimming_is_the_operators_choice(tools, settings):
    settings.RETENTION_KEEP_VERSIONS = 100
    saved_many_times(tools, "hist-trim", 300, days_ago=60)
    result = retention_task(transport="command")
    assert result["versionsByTask"] == {"hist-trim": 200}
    assert version_count("hist-trim") == -1  # the oldest went
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(version), count(*) FROM {qualified('context_versions')} "
                       "WHERE task_id = 'hist-trim'")
        assert cursor.fetchone() == (201, 100)


def test_defaults_keep_every_version():
    values = load_settings({})
    assert values.RETENTION_KEEP_VERSIONS == 0  # 0: no trimming
    assert values.RETENTION_KEEP_DAYS == 30
    assert values.CHECKPOINT_CHECK_INTERVAL_SECONDS == 86400


@pytest.mark.parametrize(("setting", "value"), [
    ("RETENTION_KEEP_VERSIONS", "lots"), ("RETENTION_KEEP_VERSIONS", "-5"),
    ("RETENTION_KEEP_DAYS", "nan"), ("RETENTION_KEEP_DAYS", "-1"),
    ("RETENTION_CHECKPOINTS_PER_TASK", "1.5"), ("RETENTION_PRUNE_LABELLED_CHECKPOINTS", "maybe"),
    ("RETENTION_EVENT_DAYS", "forever"), ("RETENTION_BATCH_SIZE", "0"),
    ("RETENTION_INTERVAL_SECONDS", "daily"), ("RETENTION_TASK_FILE_ACTION", "shred"),
    ("CHECKPOINT_CHECK_INTERVAL_SECONDS", "0"),
])
def test_a_bad_retention_value_is_e1690_naming_it(setting, value):
    with pytest.raises(ConfigError) as caught:
        load_settings({setting: value})
    assert caught.value.code == "E1690" and caught.value.setting == setting


def test_startup_stops_with_one_line_on_a_bad_retention_value():
    env = {**os.environ, "RETENTION_KEEP_VERSIONS": "all"}
    result = subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "E1690: RETENTION_KEEP_VERSIONS: must be an integer, got 'all'"]
