"""Old files (spec 7.4 "archival of old contexts"; issue 22 item 10): retention takes the
backup files of archived tasks and of tasks completed longer than RETENTION_TASK_FILE_DAYS
out of task-agents/ (every project's), into the project's monthly archive or away; live
and recently completed tasks keep theirs; conflict detection does not report the missing
files; a later save writes the file again."""

from __future__ import annotations

import gzip
import io
import json
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.db import connection, transaction
from django.utils import timezone

from conflicts.models import ContextConflict
from foundation.backends import files
from foundation.core.db import qualified
from orchestrator.ops import retention

pytestmark = pytest.mark.django_db


def policy(**overrides) -> retention.RetentionPolicy:
    values = {"keep_versions": 100, "keep_days": 30, "checkpoints_per_task": 100,
              "prune_labelled_checkpoints": False, "event_days": 30, "batch_size": 100,
              "task_file_days": 30, "task_file_action": "archive"}
    return retention.RetentionPolicy(**{**values, **overrides})


def backdate(task_id: str, days: float) -> None:
    """Last updated ``days`` ago (the update_updated_at trigger would stamp now())."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL session_replication_role = replica")
        cursor.execute(f"UPDATE {qualified('task_contexts')} SET updated_at = %s "
                       "WHERE task_id = %s", [timezone.now() - timedelta(days=days), task_id])


def archived_lines(project_id: str | None = None) -> list[dict]:
    directory = files.context_dir(project_id) / "archive"
    lines = []
    for path in sorted(directory.glob("task-agents-*.jsonl.gz")):
        with gzip.open(path, "rt") as handle:
            lines += [json.loads(line) for line in handle if line.strip()]
    return lines


@pytest.fixture
def fleet(tools, make_task):
    """Default project: live (in progress), done-old (completed 40 days ago), done-new
    (completed yesterday), shelved (archived today); project far: far-shelved (archived)."""
    make_task("live", status="in_progress")
    for task_id in ("done-old", "done-new"):
        make_task(task_id, status="completed")
    make_task("shelved", status="archived")
    tools.ok("create_project", {"projectId": "far", "name": "Far"})
    make_task("far-shelved", projectId="far", status="archived")
    backdate("done-old", 40)
    backdate("done-new", 1)
    return tools


def present(project_id: str | None = None) -> set[str]:
    directory = files.context_dir(project_id) / "task-agents"
    return {p.stem for p in directory.glob("*.json")}


def test_archives_files_of_archived_and_long_completed_tasks(fleet):
    assert {"live", "done-old", "done-new", "shelved"} <= present()
    assert present("far") == {"far-shelved"}
    dry = retention.prune(policy(), dry_run=True)
    assert dry.task_files == ["done-old", "far-shelved", "shelved"]
    assert {"done-old", "shelved"} <= present() and archived_lines() == []
    report = retention.prune(policy())
    assert report.task_files == ["done-old", "far-shelved", "shelved"]
    assert present() == {"live", "done-new"} and present("far") == set()
    # Each archived file is one line of its project's monthly archive, content and all.
    lines = {line["taskId"]: line for line in archived_lines()}
    assert set(lines) == {"done-old", "shelved"}
    assert lines["shelved"]["reason"] == "archived"
    assert lines["done-old"]["reason"] == "completed"
    assert lines["done-old"]["file"]["taskId"] == "done-old"
    assert lines["done-old"]["file"]["status"] == "completed"
    assert [line["taskId"] for line in archived_lines("far")] == ["far-shelved"]
    # Nothing left to do: a second run archives nothing and adds no lines.
    assert retention.prune(policy()).task_files == []
    assert len(archived_lines()) == 2
    assert "task files" in "\n".join(report.lines())
    assert report.as_dict()["taskFiles"] == ["done-old", "far-shelved", "shelved"]


def test_delete_action_and_the_age_setting(fleet):
    report = retention.prune(policy(task_file_action="delete", task_file_days=0.5))
    # done-new (a day old) is past half a day too.
    assert report.task_files == ["done-new", "done-old", "far-shelved", "shelved"]
    assert present() == {"live"}
    assert not (files.context_dir() / "archive").exists()


def test_a_file_saved_again_meanwhile_stays(fleet):
    # A save reopened the task after retention chose it: its file says so, and stays.
    path = files.task_file("shelved")
    content = json.loads(path.read_text())
    files.write_json_atomic(path, {**content, "status": "in_progress"})
    assert "shelved" not in retention.prune(policy()).task_files
    assert "shelved" in present()


def test_detection_ignores_missing_files_and_a_save_writes_the_file_again(fleet):
    retention.prune(policy())
    answer = fleet.ok("detect_conflicts", {"conflictTypes": ["data_inconsistency"]})
    assert answer["detected"] == []
    assert not ContextConflict.objects.filter(conflict_type="data_inconsistency").exists()
    fleet.ok("save_context_snapshot", {"taskId": "shelved",
                                       "updates": {"status": "in_progress"}})
    assert "shelved" in present()
    assert json.loads(files.task_file("shelved").read_text())["status"] == "in_progress"
    # The hourly sync (no taskIds) does not bring archived or completed files back.
    fleet.ok("sync_hot_context", {})
    assert "done-old" not in present() and "far-shelved" not in present("far")


def test_the_prune_command_and_tool_report_task_files(fleet, settings):
    settings.RETENTION_TASK_FILE_DAYS = 30
    out = io.StringIO()
    call_command("prune", "--dry-run", stdout=out)
    assert "would archive 3 task files" in out.getvalue()
    out = io.StringIO()
    call_command("prune", stdout=out)
    assert "archived 3 task files" in out.getvalue()
    assert present() == {"live", "done-new"}


def test_nothing_happens_while_file_sync_is_off(fleet, settings):
    settings.ENABLE_FILE_SYNC = False
    assert retention.prune(policy()).task_files == []
    settings.ENABLE_FILE_SYNC = True
    assert {"done-old", "shelved"} <= present()
