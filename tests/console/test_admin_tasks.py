"""The tasks console (console/admin/tasks.py, orphans.py): the task list, version history,
diff and rollback, checkpoints, read-only versions, orphaned work; through Django's test
client as a logged-in staff user."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection
from django.urls import reverse

from contexts.models import Checkpoint, ContextVersion, TaskContext
from foundation.core.db import qualified

pytestmark = pytest.mark.django_db


def test_task_list_shows_columns_and_active_marker(admin_client, tools, make_task):
    make_task("adm-1", currentPhase="design")
    tools.ok("switch_task", {"toTaskId": "adm-1"})
    page = admin_client.get(reverse("admin:contexts_taskcontext_changelist"))
    html = page.content.decode()
    assert page.status_code == 200
    assert "adm-1" in html and "design" in html and "project's active task" in html


def test_version_rollback_flow_with_diff_and_confirmation(admin_client, tools, make_task):
    make_task("adm-2", currentPhase="one")
    tools.ok("save_context_snapshot", {"taskId": "adm-2", "updates": {"currentPhase": "two"}})
    task = TaskContext.objects.get(task_id="adm-2")
    change_url = reverse("admin:contexts_taskcontext_change", args=[task.pk])
    page = admin_client.get(change_url, {"diff": 1})
    html = page.content.decode()
    assert page.status_code == 200
    assert 'id="version-history"' in html and 'id="version-diff"' in html
    assert "currentPhase" in html and "roll back to this version" in html

    rollback_url = reverse("admin:contexts_taskcontext_rollback", args=[task.pk])
    confirm = admin_client.get(rollback_url, {"type": "version", "version": 1})
    html = confirm.content.decode()
    assert confirm.status_code == 200
    assert "backup checkpoint" in html and "two" in html and "one" in html
    # Showing the confirmation changed nothing.
    assert TaskContext.objects.get(task_id="adm-2").version == 2

    done = admin_client.post(rollback_url, {"type": "version", "version": 1,
                                            "create_backup": "on"})
    assert done.status_code == 302 and done.url == change_url
    task.refresh_from_db()
    assert (task.current_phase, task.version) == ("one", 3)
    latest = ContextVersion.objects.get(task_id="adm-2", version=3)
    assert latest.change_summary == "Rollback to version 1"
    assert latest.created_by == "admin:admin"
    assert Checkpoint.objects.filter(task_id="adm-2", checkpoint_type="auto").count() == 1
    assert "Rolled back" in admin_client.get(change_url).content.decode()


def test_checkpoint_rollback_and_checkpoint_pages(admin_client, tools, make_task):
    make_task("adm-3", currentPhase="saved")
    checkpoint = tools.ok("create_checkpoint", {"label": "before", "taskId": "adm-3"})
    tools.ok("save_context_snapshot", {"taskId": "adm-3", "updates": {"currentPhase": "later"}})
    task = TaskContext.objects.get(task_id="adm-3")
    page = admin_client.get(reverse("admin:contexts_taskcontext_change", args=[task.pk]))
    assert checkpoint["checkpointId"] in page.content.decode()
    rollback_url = reverse("admin:contexts_taskcontext_rollback", args=[task.pk])
    admin_client.post(rollback_url, {"type": "checkpoint",
                                     "checkpoint": checkpoint["checkpointId"]})
    task.refresh_from_db()
    assert task.current_phase == "saved"
    assert ContextVersion.objects.get(task_id="adm-3", version=task.version).change_type == \
        "recovery"
    stored = Checkpoint.objects.get(checkpoint_id=checkpoint["checkpointId"])
    listing = admin_client.get(reverse("admin:contexts_checkpoint_changelist"))
    assert checkpoint["checkpointId"] in listing.content.decode()
    detail = admin_client.get(reverse("admin:contexts_checkpoint_change", args=[stored.pk]))
    assert detail.status_code == 200 and "sha256:" in detail.content.decode()


def test_a_corrupt_checkpoint_stands_out_on_the_console(admin_client, tools, make_task):
    """Seed 003 §3.2: the checkpoint check's verdict on the list, the detail page and the
    task page (where a corrupt checkpoint offers no rollback)."""
    make_task("adm-cc", currentPhase="saved")
    good = tools.ok("create_checkpoint", {"label": "good", "taskId": "adm-cc",
                                          "tags": ["release"]})["checkpointId"]
    bad = tools.ok("create_checkpoint", {"label": "bad", "taskId": "adm-cc"})["checkpointId"]
    with connection.cursor() as cursor:
        cursor.execute(f"UPDATE {qualified('checkpoints')} SET snapshot = jsonb_set(snapshot, "
                       "'{tasks,adm-cc,current_phase}', '\"forged\"') "
                       "WHERE checkpoint_id = %s", [bad])
    call_command("check_checkpoints", stdout=io.StringIO())
    listing = admin_client.get(reverse("admin:contexts_checkpoint_changelist")).content.decode()
    assert listing.count(">corrupt</strong>") == 1 and "release" in listing
    only_corrupt = admin_client.get(reverse("admin:contexts_checkpoint_changelist"),
                                    {"status": "corrupt"}).content.decode()
    assert bad in only_corrupt and good not in only_corrupt
    stored = Checkpoint.objects.get(checkpoint_id=bad)
    detail = admin_client.get(reverse("admin:contexts_checkpoint_change", args=[stored.pk]))
    assert "does not match its checksum" in detail.content.decode()
    task = TaskContext.objects.get(task_id="adm-cc")
    page = admin_client.get(reverse("admin:contexts_taskcontext_change",
                                    args=[task.pk])).content.decode()
    assert page.count("cannot be restored") == 1 and f"checkpoint={good}" in page
    assert f"checkpoint={bad}" not in page
    # Archiving sets a checkpoint aside (still restorable); a corrupt one stays corrupt.
    changelist = reverse("admin:contexts_checkpoint_changelist")
    chosen = [Checkpoint.objects.get(checkpoint_id=c).pk for c in (good, bad)]
    done = admin_client.post(changelist, {"action": "archive", "_selected_action": chosen},
                             follow=True).content.decode()
    assert "1 checkpoint(s) archived; 1 corrupt one(s) stay corrupt" in done
    statuses = {c["checkpointId"]: c["status"] for c in tools.ok(
        "list_checkpoints", {"taskId": "adm-cc"})["checkpoints"]}
    assert statuses == {good: "archived", bad: "corrupt"}
    tools.ok("rollback_to", {"taskId": "adm-cc", "target": {"type": "checkpoint",
                                                            "checkpointId": good}})
    admin_client.post(changelist, {"action": "make_active", "_selected_action": chosen[:1]})
    assert tools.ok("list_checkpoints", {"label": "good"})["checkpoints"][0]["status"] == \
        "active"


def test_bad_rollback_target_shows_an_error_not_a_500(admin_client, make_task):
    make_task("adm-4")
    task = TaskContext.objects.get(task_id="adm-4")
    url = reverse("admin:contexts_taskcontext_rollback", args=[task.pk])
    response = admin_client.get(url, {"type": "version", "version": 42}, follow=True)
    assert response.status_code == 200 and "E1623" in response.content.decode()


def test_versions_are_read_only(admin_client, make_task):
    make_task("adm-5")
    version = ContextVersion.objects.get(task_id="adm-5")
    assert admin_client.get(reverse("admin:contexts_contextversion_add")).status_code == 403
    url = reverse("admin:contexts_contextversion_change", args=[version.pk])
    assert admin_client.get(url).status_code == 200
    assert admin_client.post(url, {"change_summary": "edited"}).status_code == 403
    delete = reverse("admin:contexts_contextversion_delete", args=[version.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 403


def test_task_list_marks_and_filters_orphaned_work(admin_client, tools, make_task):
    from sessions.services import recovery
    from tests.sessions.helpers import backdate

    make_task("adm-orphan", status="in_progress")
    make_task("adm-busy", status="in_progress")
    tools.ok("start_session", {"sessionId": "adm-s1", "taskId": "adm-orphan"})
    tools.ok("start_session", {"sessionId": "adm-s2", "taskId": "adm-busy"})
    backdate("adm-s1", 10)
    recovery.detect_crashed_sessions()
    url = reverse("admin:contexts_taskcontext_changelist")
    html = admin_client.get(url).content.decode()
    assert html.count("⚠ orphaned") == 1
    only = admin_client.get(url, {"orphaned": "yes"}).content.decode()
    assert "adm-orphan" in only and "adm-busy" not in only
    others = admin_client.get(url, {"orphaned": "no"}).content.decode()
    assert "adm-busy" in others and "adm-orphan" not in others
