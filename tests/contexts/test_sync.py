"""sync_hot_context: rewrites the hot context, the task caches and every file from Postgres;
a failed Redis is E1650, failed file writes E1651, both E1653. (Its management command and beat entry: test_sync_jobs.py.)"""

from __future__ import annotations

import json

import pytest

from foundation.backends import files, redis_store


@pytest.mark.django_db
def test_sync_hot_context_writes_every_target(tools, make_task, settings):
    make_task("sy-1")
    make_task("sy-2", status="archived")
    tools.ok("switch_task", {"toTaskId": "sy-1"})
    redis_store.run(lambda r: r.flushdb())
    for path in settings.CONTEXT_DIR.rglob("*.json"):
        path.unlink()
    result = tools.ok("sync_hot_context", {})
    assert result["success"] is True and result["errors"] == []
    assert result["synced"] == {"redis": {"hotContext": True, "taskContexts": 1},
                                "files": {"registry": True, "taskContexts": 1,
                                          "hotContext": True}}
    assert redis_store.get_json("context:hot")["taskId"] == "sy-1"
    assert redis_store.get_json("context:task:sy-1")["taskId"] == "sy-1"
    assert files.task_file("sy-1").exists() and not files.task_file("sy-2").exists()
    constants = json.loads((settings.CONTEXT_DIR / "shared" / "project-constants.json")
                           .read_text())
    assert constants["projectId"] == settings.MCP_PROJECT_ID
    assert set(json.loads((settings.CONTEXT_DIR / "_registry.json").read_text())["tasks"]) == {
        "sy-1", "sy-2"}


@pytest.fixture
def files_unwritable(settings, tmp_path):
    """File backups that cannot be written, as a full or read-only disk: CONTEXT_DIR is a
    regular file, so every directory and file under it fails (root included)."""
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    settings.CONTEXT_DIR = blocked


@pytest.mark.django_db
def test_redis_down_is_e1650(tools, make_task, settings):
    """Redis unreachable (a closed port): Redis's own code, the files still written."""
    from tests.conftest import free_port

    make_task("ps-1")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = tools.call("sync_hot_context", {})
    assert (response.status, response.error_code) == (502, "E1650"), response.body
    details = response.body["error"]["details"]
    assert details["synced"]["files"]["taskContexts"] == 1
    assert details["errors"] and all(e.startswith("redis") for e in details["errors"])


@pytest.mark.django_db
def test_files_failing_is_e1651(tools, make_task, files_unwritable):
    make_task("pf-1")
    redis_store.run(lambda r: r.flushdb())
    response = tools.call("sync_hot_context", {})
    assert (response.status, response.error_code) == (500, "E1651"), response.body
    details = response.body["error"]["details"]
    assert details["synced"]["redis"]["taskContexts"] == 1
    assert details["synced"]["files"]["taskContexts"] == 0
    assert details["errors"] and all(e.startswith("file") for e in details["errors"])
    assert redis_store.get_json("context:task:pf-1")["taskId"] == "pf-1"


@pytest.mark.django_db
def test_both_failing_is_e1653(tools, make_task, settings, files_unwritable):
    from tests.conftest import free_port

    make_task("pb-1")
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    response = tools.call("sync_hot_context", {})
    assert (response.status, response.error_code) == (502, "E1653"), response.body
    errors = response.body["error"]["details"]["errors"]
    assert {e.split(":")[0] for e in errors} == {"redis", "file"}


@pytest.mark.django_db
def test_sync_leaves_current_files_alone_and_repairs_the_rest(tools, make_task):
    """A repair pass: a task file that already says what Postgres says is not rewritten
    (thousands of them, every five minutes); an edited or missing one is."""
    for task_id in ("rp-1", "rp-2", "rp-3"):
        make_task(task_id)
    tools.ok("sync_hot_context", {})
    current, edited, missing = (files.task_file(t) for t in ("rp-1", "rp-2", "rp-3"))
    untouched = current.stat()
    stored = json.loads(edited.read_text())
    edited.write_text(json.dumps({**stored, "currentPhase": "edited by hand"}))
    missing.unlink()

    result = tools.ok("sync_hot_context", {})

    assert result["synced"]["files"]["taskContexts"] == 3
    after = current.stat()
    assert (after.st_ino, after.st_mtime_ns) == (untouched.st_ino, untouched.st_mtime_ns)
    assert json.loads(edited.read_text()) == stored
    assert json.loads(missing.read_text())["taskId"] == "rp-3"
