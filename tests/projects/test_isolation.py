"""Two repositories on one server are two projects (issue 19): their conflicts, global
context, active task, hot context, files, relationships and sessions never mix."""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from conflicts.models import ContextConflict
from foundation.backends import redis_store
from foundation.core.models import Project
from tests.conftest import ToolClient

pytestmark = pytest.mark.django_db


@pytest.fixture
def two_repositories(tools):
    """app-one (a1, a2) and app-two (b1), every task on src/app.py; d1 in the default."""
    for key in ("app-one", "app-two"):
        tools.ok("create_project", {"projectId": key, "name": key.title()})
    for task_id, project in (("a1", "app-one"), ("a2", "app-one"), ("b1", "app-two")):
        tools.ok("create_task", {"taskId": task_id, "name": task_id, "projectId": project,
                                 "status": "in_progress", "keyFiles": ["src/app.py"]})
    tools.ok("create_task", {"taskId": "d1", "name": "d1", "status": "in_progress",
                             "keyFiles": ["src/app.py"]})
    return tools


def pairs() -> set[tuple[str, str, str]]:
    return {(c.project_id, *sorted((c.task_a_id, c.task_b_id)))
            for c in ContextConflict.objects.filter(conflict_type="file_conflict")}


def test_the_same_file_conflicts_within_a_project_never_across(two_repositories):
    tools = two_repositories
    for task_id in ("a1", "b1", "d1"):  # held locks do not pair projects either
        session = tools.ok("start_session", {"taskId": task_id})["sessionId"]
        tools.ok("acquire_task_lock", {"taskId": task_id, "sessionId": session})
    tools.ok("detect_conflicts", {})
    assert pairs() == {("app-one", "a1", "a2")}
    # Asked for one project, detection looks at that project only.
    ContextConflict.objects.all().delete()
    tools.ok("detect_conflicts", {"projectId": "app-two"})
    assert pairs() == set()
    listed = tools.get("/api/v1/conflicts/", projectId="app-one")
    assert listed.status == 200 and listed.body["count"] == 0


def test_a_task_names_its_project_and_gets_that_projects_global_context(two_repositories):
    tools = two_repositories
    tools.ok("update_global_context", {"projectId": "app-two", "hardRules": ["B only"]})
    b1 = tools.ok("get_unified_context", {"taskId": "b1"})
    assert b1["projectId"] == "app-two" and b1["global"]["hardRules"] == ["B only"]
    a1 = tools.ok("get_unified_context", {"taskId": "a1"})
    assert a1["projectId"] == "app-one" and a1["global"]["hardRules"] == []
    without_task = tools.ok("get_unified_context", {"projectId": "app-two"})
    assert without_task["projectId"] == "app-two"
    assert without_task["global"]["hardRules"] == ["B only"]


def test_each_project_has_its_active_task_default_keeps_the_spec_names(two_repositories):
    tools = two_repositories
    tools.ok("switch_task", {"toTaskId": "d1"})
    tools.ok("switch_task", {"toTaskId": "a1"})
    tools.ok("switch_task", {"toTaskId": "b1"})
    projects = {p["projectId"]: p for p in tools.ok("list_projects")["projects"]}
    assert projects[settings.MCP_PROJECT_ID]["activeTaskId"] == "d1"
    assert projects["app-one"]["activeTaskId"] == "a1"
    assert projects["app-two"]["activeTaskId"] == "b1"
    # Redis: the spec's context:hot is the default project's; others are namespaced.
    assert redis_store.get_json("context:hot")["taskId"] == "d1"
    assert redis_store.get_json("context:project:app-one:hot")["taskId"] == "a1"
    assert redis_store.get_json("context:project:app-two:hot")["taskId"] == "b1"
    for task_id in ("a1", "b1", "d1"):  # task ids are unique server-wide: the spec's keys
        assert redis_store.get_json(f"context:task:{task_id}")["taskId"] == task_id
    # Files: the spec's layout for the default project, projects/<id>/ for the others.
    root = settings.CONTEXT_DIR
    hot = json.loads((root / "_hot_context.json").read_text())
    assert hot["taskId"] == "d1"
    registry = json.loads((root / "_registry.json").read_text())
    assert registry["activeTask"] == "d1" and set(registry["tasks"]) == {"d1"}
    assert (root / "task-agents" / "d1.json").exists()
    one = root / "projects" / "app-one"
    assert json.loads((one / "_hot_context.json").read_text())["taskId"] == "a1"
    registry = json.loads((one / "_registry.json").read_text())
    assert registry["activeTask"] == "a1" and set(registry["tasks"]) == {"a1", "a2"}
    assert (one / "task-agents" / "a1.json").exists()
    assert not (root / "task-agents" / "a1.json").exists()


def test_nothing_links_two_projects(two_repositories):
    tools = two_repositories
    cases = [
        ("switch_task", {"fromTaskId": "a1", "toTaskId": "b1"}),
        ("add_task_relationship", {"sourceTaskId": "a1", "targetTaskId": "b1",
                                   "relationshipType": "blocks"}),
        ("report_conflict", {"taskAId": "a1", "taskBId": "b1", "description": "x"}),
        ("create_checkpoint", {"label": "mixed", "includeTasks": ["a1", "b1"]}),
    ]
    for tool, arguments in cases:
        response = tools.call(tool, arguments)
        assert (response.status, response.error_code) == (409, "E1607"), tool
    session = tools.ok("start_session", {"taskId": "a1"})["sessionId"]
    moved = tools.call("heartbeat", {"sessionId": session, "taskId": "b1"})
    assert (moved.status, moved.error_code) == (409, "E1607")


def test_sessions_are_in_their_tasks_project_and_report_their_projects_crashes(
        two_repositories):
    tools = two_repositories
    on_b1 = tools.ok("start_session", {"taskId": "b1"})
    assert on_b1["projectId"] == "app-two"
    named = tools.ok("start_session", {"projectId": "app-one"})
    assert named["projectId"] == "app-one"
    mismatch = tools.call("start_session", {"projectId": "app-one", "taskId": "b1"})
    assert (mismatch.status, mismatch.error_code) == (409, "E1607")
    unknown = tools.call("start_session", {"projectId": "nowhere"})
    assert (unknown.status, unknown.error_code) == (404, "E1605")


def test_calls_naming_no_project_go_where_the_client_works(two_repositories, api_token):
    repository_two = ToolClient(api_token, project="app-two")
    created = repository_two.ok("create_task", {"taskId": "b2", "name": "b2"})
    assert created["projectId"] == "app-two"
    assert repository_two.ok("start_session", {})["projectId"] == "app-two"
    listed = repository_two.ok("list_projects")
    assert [p["projectId"] for p in listed["projects"]] == ["app-two"]
    # Naming a project still wins, and the header is checked like an argument.
    assert repository_two.ok("create_task", {"taskId": "a3", "name": "a3",
                                             "projectId": "app-one"})["projectId"] == "app-one"
    malformed = ToolClient(api_token, project="no spaces").call("list_projects")
    assert (malformed.status, malformed.error_code) == (400, "E1612")


def test_create_project_and_the_command(tools):
    from io import StringIO

    from django.core.management import CommandError, call_command

    answer = tools.ok("create_project", {"projectId": "web", "name": "Web"})
    assert answer["projectId"] == "web"
    again = tools.call("create_project", {"projectId": "web", "name": "Web"})
    assert (again.status, again.error_code) == (409, "E1606")
    out = StringIO()
    call_command("create_project", "api", "--name", "The API", stdout=out)
    assert Project.objects.get(pk="api").name == "The API" and "created" in out.getvalue()
    with pytest.raises(CommandError, match="E1606"):
        call_command("create_project", "api", stdout=StringIO())
    keys = [p["projectId"] for p in tools.ok("list_projects")["projects"]]
    assert keys == sorted(["api", "web", settings.MCP_PROJECT_ID])
