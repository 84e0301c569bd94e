"""Storage quotas by size (seed 003; issue 22 item 4): per project, the bytes of task
versions and checkpoints against STORAGE_QUOTA_BYTES. A write that would pass it answers
413 E1617 and writes nothing (save, create_task, create_checkpoint, rollback_to with its
backup, switch_task); the counters the trigger keeps equal a recount from the tables;
deletes (retention) free room; another project is not affected; 0 is no limit."""

from __future__ import annotations

import secrets

import pytest
from django.db import connection

from contexts.models import Checkpoint, ContextVersion, TaskContext
from contexts.services import storage
from foundation.core.db import qualified
from orchestrator.ops import retention

pytestmark = pytest.mark.django_db

# Does not compress: checkpoints store their content compressed.
BIG = secrets.token_hex(10_000)


def stored_bytes(project_id: str) -> int:
    """What the project stores, counted from the tables."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT COALESCE(sum(octet_length(snapshot::text)), 0) FROM ("
            f"SELECT snapshot FROM {qualified('context_versions')} WHERE project_id = %s "
            f"UNION ALL SELECT snapshot FROM {qualified('checkpoints')} WHERE project_id = %s"
            ") s", [project_id, project_id])
        return int(cursor.fetchone()[0])


@pytest.fixture
def set_quota(settings):
    """set_quota(n): the limit this connection's writes are held to (as the setting would
    make it at connect time); back to the configured one afterwards."""
    def apply(limit: int) -> None:
        settings.STORAGE_QUOTA_BYTES = limit
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('orchestrator.storage_quota_bytes', %s, false)",
                           [str(limit)])
    yield apply
    with connection.cursor() as cursor:
        cursor.execute("RESET orchestrator.storage_quota_bytes")


def room_for(project_id: str, extra: int) -> int:
    """A limit leaving ``extra`` bytes free."""
    return storage.usage_by_project([project_id])[project_id] + extra


def test_the_limit_comes_from_the_setting_at_connect_time(settings):
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('orchestrator.storage_quota_bytes', true)")
        assert cursor.fetchone()[0] == str(settings.STORAGE_QUOTA_BYTES)
    assert settings.STORAGE_QUOTA_BYTES == 1024 ** 3  # seed 003's default: 1 GB


def test_counters_follow_every_write_and_delete(tools, make_task, settings):
    project = settings.MCP_PROJECT_ID
    make_task("sq-a", immediateContext={"notes": "a" * 500})
    for i in range(3):
        tools.ok("save_context_snapshot", {"taskId": "sq-a", "updates": {"iteration": i + 1}})
    tools.ok("create_checkpoint", {"label": "one", "taskId": "sq-a"})
    tools.ok("rollback_to", {"taskId": "sq-a", "target": {"type": "version", "version": 1}})
    assert storage.usage_by_project([project])[project] == stored_bytes(project) > 0
    Checkpoint.objects.filter(task_id="sq-a").first().delete()
    assert storage.usage_by_project([project])[project] == stored_bytes(project)
    before = stored_bytes(project)
    storage.recount()
    assert storage.usage_by_project([project])[project] == before


def test_a_save_past_the_limit_is_413_and_writes_nothing(tools, make_task, set_quota,
                                                          settings):
    project = settings.MCP_PROJECT_ID
    make_task("sq-b")
    set_quota(room_for(project, 5_000))
    before = TaskContext.objects.get(task_id="sq-b")
    versions = ContextVersion.objects.filter(task_id="sq-b").count()
    response = tools.call("save_context_snapshot", {"taskId": "sq-b", "updates": {
        "immediateContext": {"notes": BIG}}})
    assert (response.status, response.error_code) == (413, "E1617")
    details = response.body["error"]["details"]
    assert details["projectId"] == project
    assert details["limitBytes"] == settings.STORAGE_QUOTA_BYTES
    assert details["usedBytes"] + details["writeBytes"] > details["limitBytes"]
    assert "STORAGE_QUOTA_BYTES" in response.body["error"]["message"]
    after = TaskContext.objects.get(task_id="sq-b")
    assert (after.version, after.immediate_context) == (before.version,
                                                        before.immediate_context)
    assert ContextVersion.objects.filter(task_id="sq-b").count() == versions
    # A write that fits still goes through.
    tools.ok("save_context_snapshot", {"taskId": "sq-b", "updates": {"iteration": 4}})
    assert storage.usage_by_project([project])[project] == stored_bytes(project)


def test_create_task_checkpoint_and_rollback_past_the_limit(tools, make_task, set_quota,
                                                            settings):
    project = settings.MCP_PROJECT_ID
    make_task("sq-c", immediateContext={"notes": BIG})
    tools.ok("save_context_snapshot", {"taskId": "sq-c", "updates": {"iteration": 1}})
    set_quota(room_for(project, 1_000))
    refused = tools.call("create_task", {"taskId": "sq-new", "name": "n",
                                         "description": BIG})
    assert (refused.status, refused.error_code) == (413, "E1617")
    assert not TaskContext.objects.filter(task_id="sq-new").exists()
    checkpoints = Checkpoint.objects.count()
    refused = tools.call("create_checkpoint", {"label": "too big", "taskId": "sq-c"})
    assert (refused.status, refused.error_code) == (413, "E1617")
    # The rollback's backup checkpoint would pass the limit: nothing is restored either.
    refused = tools.call("rollback_to", {"taskId": "sq-c", "target": {
        "type": "version", "version": 1}})
    assert (refused.status, refused.error_code) == (413, "E1617")
    # Without a backup the restore is a new version, as big as the task: refused as well.
    refused = tools.call("rollback_to", {"taskId": "sq-c", "createBackup": False,
                                         "target": {"type": "version", "version": 1}})
    assert (refused.status, refused.error_code) == (413, "E1617")
    assert Checkpoint.objects.count() == checkpoints
    assert TaskContext.objects.get(task_id="sq-c").iteration == 1
    # Retention (or anything deleting) frees room.
    set_quota(room_for(project, 200_000))
    tools.ok("create_checkpoint", {"label": "fits now", "taskId": "sq-c"})


def test_switch_task_saving_past_the_limit_changes_nothing(tools, make_task, set_quota,
                                                           settings):
    make_task("sq-from")
    make_task("sq-to")
    set_quota(room_for(settings.MCP_PROJECT_ID, 5_000))
    refused = tools.call("switch_task", {"fromTaskId": "sq-from", "toTaskId": "sq-to",
                                         "currentTaskUpdates": {
                                             "immediateContext": {"notes": BIG}}})
    assert (refused.status, refused.error_code) == (413, "E1617")
    assert TaskContext.objects.get(task_id="sq-from").version == 1


def test_the_limit_is_per_project_and_zero_is_none(tools, make_task, set_quota, settings):
    tools.ok("create_project", {"projectId": "sq-other", "name": "Other"})
    make_task("sq-d")
    set_quota(room_for(settings.MCP_PROJECT_ID, 1_000))
    assert tools.call("save_context_snapshot", {"taskId": "sq-d", "updates": {
        "immediateContext": {"notes": BIG}}}).error_code == "E1617"
    # The other project stores nothing yet: the same limit leaves it room.
    make_task("sq-o", projectId="sq-other")
    set_quota(0)
    tools.ok("save_context_snapshot", {"taskId": "sq-d", "updates": {
        "immediateContext": {"notes": BIG}}})
    used = storage.usage_by_project([settings.MCP_PROJECT_ID, "sq-other"])
    assert used == {settings.MCP_PROJECT_ID: stored_bytes(settings.MCP_PROJECT_ID),
                    "sq-other": stored_bytes("sq-other")}


@pytest.mark.django_db(transaction=True)
def test_the_one_statement_save_is_refused_whole(tools, make_task, set_quota, settings):
    # Outside a test transaction the save takes its one-statement path (autocommit).
    project = settings.MCP_PROJECT_ID
    make_task("sq-fast")
    tools.ok("save_context_snapshot", {"taskId": "sq-fast", "updates": {"iteration": 1}})
    set_quota(room_for(project, 2_000))
    refused = tools.call("save_context_snapshot", {"taskId": "sq-fast", "updates": {
        "immediateContext": {"notes": BIG}}})
    assert (refused.status, refused.error_code) == (413, "E1617")
    assert TaskContext.objects.get(task_id="sq-fast").version == 2
    assert ContextVersion.objects.filter(task_id="sq-fast").count() == 2
    assert storage.usage_by_project([project])[project] == stored_bytes(project)
    # Retention deleting versions gives the room back, counted exactly.
    for i in range(5):
        set_quota(0)
        tools.ok("save_context_snapshot", {"taskId": "sq-fast", "updates": {
            "immediateContext": {"notes": f"{i}" * 5_000}}})
    retention.prune(retention.RetentionPolicy(
        keep_versions=1, keep_days=0, checkpoints_per_task=100,
        prune_labelled_checkpoints=False, event_days=30, batch_size=2))
    assert ContextVersion.objects.filter(task_id="sq-fast").count() == 1
    assert storage.usage_by_project([project])[project] == stored_bytes(project)
