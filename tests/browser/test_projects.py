"""The project switcher in a real browser: choosing a project in the header narrows the
page at once (no button to press), on the list and on the overview; "All projects" shows
everything again."""

from __future__ import annotations

import pytest

from sessions.services import recovery

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def fast_overview_refresh(monkeypatch):
    monkeypatch.setattr("console.views.REFRESH_SECONDS", 1)


@pytest.fixture
def two_projects(tools):
    for project_id, name in (("web", "Web shop"), ("api", "API server")):
        tools.ok("create_project", {"projectId": project_id, "name": name})
        tools.ok("create_task", {"taskId": f"{project_id}-task", "name": f"{name} task",
                                 "projectId": project_id, "status": "in_progress"})
        tools.ok("start_session", {"sessionId": f"{project_id}-session",
                                   "projectId": project_id})
        # Its task's session crashed: orphaned work, one per project.
        tools.ok("start_session", {"sessionId": f"{project_id}-crashed",
                                   "taskId": f"{project_id}-task"})
        recovery.mark_crashed(f"{project_id}-crashed")
    return tools


def listed_tasks(console) -> set[str]:
    # The task column shows the name, then the id (shortened, whole in its title).
    return {code.get_attribute("title") for code in
            console.page.locator("#result_list th.field-task_label .short-id code").all()}


def test_the_switcher_narrows_the_lists_and_the_overview(console, two_projects):
    page = console.open("/admin/contexts/taskcontext/")
    assert listed_tasks(console) == {"web-task", "api-task"}
    assert set(page.locator("#result_list td.field-project").all_inner_texts()) == \
        {"Web shop", "API server"}
    assert not page.locator("#project-switcher-go").is_visible()  # JS submits on change

    with page.expect_navigation():
        page.select_option("#project-switcher-select", "web")
    assert page.url.endswith("/admin/contexts/taskcontext/")
    assert listed_tasks(console) == {"web-task"}
    assert page.input_value("#project-switcher-select") == "web"
    console.screenshot("tasks-of-web")

    page = console.open("/admin/")
    assert console.text("#overview-project") == "Web shop"
    assert console.text("#active-session-count") == "1"
    assert console.text("#orphaned-count") == "1"
    # The auto-refresh keeps to the project too.
    page.wait_for_function("Number(document.getElementById('fleet-overview')"
                           ".getAttribute('data-refreshes') || 0) >= 1")
    assert console.text("#active-session-count") == "1"
    console.screenshot("overview-of-web")

    with page.expect_navigation():
        page.select_option("#project-switcher-select", "")
    assert console.text("#overview-project") == "all projects"
    assert console.text("#active-session-count") == "2"
