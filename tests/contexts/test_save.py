"""save_context_snapshot and the write path (spec 4.1.2, 7.2.1, 12.2.1, 12.3.1)."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from contexts.services import cache
from contexts.services.save import save_task_changes
from orchestrator.backends import files, redis_store
from orchestrator.db import qualified

pytestmark = pytest.mark.django_db


def test_service_saves_to_all_backends_with_trigger_version(make_task):
    make_task("svc-1")
    result = save_task_changes("svc-1", {"currentPhase": "testing"}, change_summary="why")
    assert result["success"] is True
    assert result["version"] == 2
    assert result["savedTo"] == {"database": True, "redis": True, "file": True}
    assert cache.read_cached_task("svc-1")["currentPhase"] == "testing"
    with connection.cursor() as cur:
        cur.execute(f"SELECT change_type, change_summary FROM {qualified('context_versions')}"
                    " WHERE task_id = %s AND version = 2", ["svc-1"])
        assert cur.fetchone() == ("manual", "why")
    assert json.loads(files.task_file("svc-1").read_text())["version"] == 2
    assert redis_store.get_json("context:task:svc-1")["version"] == 2
