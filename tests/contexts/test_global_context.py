"""update_global_context (REST and MCP), its trigger-made history and rollback."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.db import IntegrityError, connection, transaction

from contexts.models import GlobalContext, GlobalContextVersion
from contexts.services import global_context
from foundation.core.db import qualified
from tests import mcp_client

pytestmark = pytest.mark.django_db

RULES = ["Never push to main", "Run make test before committing"]


def project() -> GlobalContext:
    return GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID)


def history() -> list[GlobalContextVersion]:
    return list(GlobalContextVersion.objects.filter(context_id=project().pk).order_by("version"))


def test_update_replaces_fields_and_the_trigger_records_a_version(tools):
    before = project().version
    answer = tools.ok("update_global_context", {
        "hardRules": RULES, "techStack": ["Django", "Postgres"],
        "keyPaths": {"api": "orchestrator/tools"}, "services": {"redis": "localhost:6379"},
        "changeSummary": "house rules", "sessionId": "sess-g1"})
    assert answer["changed"] == ["hardRules", "techStack", "keyPaths", "services"]
    assert answer["version"] == before + 1 and answer["savedTo"] == {"database": True,
                                                                     "file": True}
    row = project()
    assert (row.hard_rules, row.services) == (RULES, {"redis": "localhost:6379"})
    latest = history()[-1]
    assert (latest.version, latest.change_summary, latest.session_id, latest.change_type) == \
        (before + 1, "house rules", "sess-g1", "manual")
    assert latest.snapshot["hard_rules"] == RULES
    constants = json.loads((settings.CONTEXT_DIR / "shared" / "project-constants.json")
                           .read_text())
    assert constants["hardRules"] == RULES
    # Agents read it at once through the unified context.
    assert tools.ok("get_unified_context", {})["global"]["hardRules"] == RULES


def test_an_unchanged_value_makes_no_version(tools):
    tools.ok("update_global_context", {"techStack": ["Go"]})
    count, version = len(history()), project().version
    answer = tools.ok("update_global_context", {"techStack": ["Go"]})
    assert answer["changed"] == [] and answer["version"] == version
    assert len(history()) == count


@pytest.mark.parametrize("payload, field", [
    ({"hardRules": "not a list"}, "hardRules"),
    ({"hardRules": ["ok", 3]}, "hardRules.1"),
    ({"keyPaths": {"api": 5}}, "keyPaths.api"),
    ({"services": ["redis"]}, "services"),
    ({"projectName": ""}, "projectName"),
    ({"activeTaskId": "x"}, "(root)"),
])
def test_invalid_input_is_e1612_and_writes_nothing(tools, payload, field):
    version = project().version
    response = tools.call("update_global_context", payload)
    assert (response.status, response.error_code) == (400, "E1612")
    assert any(d["field"] == field for d in response.body["error"]["details"])
    assert project().version == version


def test_service_validation_covers_callers_without_the_schema():
    with pytest.raises(Exception) as caught:
        global_context.update_global_context(settings.MCP_PROJECT_ID, {"hardRules": ["  "]})
    assert caught.value.code == "E1612"


def test_missing_project_row_is_e1611(tools):
    GlobalContext.objects.filter(project_id=settings.MCP_PROJECT_ID).delete()
    response = tools.call("update_global_context", {"techStack": ["x"]})
    assert (response.status, response.error_code) == (404, "E1611")


def test_raw_sql_update_is_versioned_too():
    count = len(history())
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL search_path TO public")
        cursor.execute(f"UPDATE {qualified('global_context')} SET tech_stack = '[\"Rust\"]' "
                       "WHERE project_id = %s", [settings.MCP_PROJECT_ID])
    rows = history()
    assert len(rows) == count + 1 and rows[-1].change_type == "auto_save"
    assert rows[-1].snapshot["tech_stack"] == ["Rust"]


def test_history_rows_are_immutable(tools):
    tools.ok("update_global_context", {"techStack": ["A"]})
    with pytest.raises(IntegrityError), transaction.atomic():
        GlobalContextVersion.objects.filter(context_id=project().pk).update(change_summary="x")


def test_diff_and_rollback_restore_a_version_as_a_new_one(tools):
    tools.ok("update_global_context", {"hardRules": ["first"]})
    first = project().version
    tools.ok("update_global_context", {"hardRules": ["second"], "services": {"a": "b:1"}})
    diff = {d["field"]: d for d in global_context.diff_with_version(settings.MCP_PROJECT_ID, first)}
    assert set(diff) == {"hardRules", "services"}
    assert (diff["hardRules"]["current"], diff["hardRules"]["restored"]) == (["second"],
                                                                             ["first"])
    answer = global_context.rollback_global_context(settings.MCP_PROJECT_ID, first,
                                                   actor="admin:someone")
    assert sorted(answer["changed"]) == ["hardRules", "services"]
    assert project().hard_rules == ["first"] and answer["version"] == first + 2
    assert history()[-1].change_summary == f"Rollback to version {first}"
    with pytest.raises(Exception) as caught:
        global_context.rollback_global_context(settings.MCP_PROJECT_ID, 999)
    assert caught.value.code == "E1623"


def test_the_tool_is_listed_over_mcp_with_the_same_schema(live_api):
    url, token = live_api
    listed = {t.name: t for t in mcp_client.list_tools(url, token).tools}
    assert "hardRules" in listed["update_global_context"].input_schema["properties"]
    result = mcp_client.call_tool(url, token, "update_global_context", {"techStack": ["mcp"]})
    assert not result.is_error and result.structured_content["changed"] == ["techStack"]
    bad = mcp_client.call_tool(url, token, "update_global_context", {"keyPaths": []})
    assert bad.is_error and bad.structured_content["error"]["code"] == "E1612"
