"""create_task: Postgres, the Redis cache and the file backup (and the registry) at version 1;
Redis down still creates; unsafe task ids write nothing."""

from __future__ import annotations

from tests.conftest import free_port


def test_create_task_writes_all_backends(tools, settings):
    import json

    from foundation.backends import redis_store

    body = tools.ok("create_task", {"taskId": "b1", "name": "backends", "keyFiles": ["x.py"]})
    assert body["savedTo"] == {"database": True, "redis": True, "file": True}
    cached = redis_store.get_json("context:task:b1")
    assert cached["keyFiles"] == ["x.py"]
    on_disk = json.loads((settings.CONTEXT_DIR / "task-agents" / "b1.json").read_text())
    assert on_disk["taskId"] == "b1" and on_disk["version"] == 1
    registry = json.loads((settings.CONTEXT_DIR / "_registry.json").read_text())
    assert registry["tasks"]["b1"]["contextFile"] == "task-agents/b1.json"


def test_create_task_survives_redis_down(tools, settings):
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"
    body = tools.ok("create_task", {"taskId": "r1", "name": "no redis"})
    assert body["savedTo"] == {"database": True, "redis": False, "file": True}


def test_unsafe_task_ids_write_nothing(tools, settings):
    for bad in ("../x", "a/b", "x" * 300, ".hidden"):
        response = tools.call("create_task", {"taskId": bad, "name": "bad"})
        assert response.status == 400 and response.error_code == "E1612", bad
    assert not (settings.CONTEXT_DIR / "task-agents").exists()
