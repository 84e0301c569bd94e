"""The console by project (issue 19, item 5): the switcher in the header of every admin
page, the lists, the overview (page, fragment, JSON) and the task graph following it,
project names in the lists, the active-task marker per project; bad input answered
without a 500."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from conflicts.models import ContextConflict
from console.projects import SESSION_KEY
from contexts.models import Checkpoint, ContextVersion, GlobalContext, TaskContext
from graph.models import TaskRelationship
from sessions.models import ActiveSession, SessionHandoff, ToolInvocation
from sessions.services import recovery

pytestmark = pytest.mark.django_db

DEFAULT = settings.MCP_PROJECT_ID
NAMES = {"web": "Web shop", "api": "API server"}
# Every list the switcher narrows: (admin URL name, model).
LISTS = [
    ("admin:contexts_taskcontext_changelist", TaskContext),
    ("admin:contexts_contextversion_changelist", ContextVersion),
    ("admin:contexts_checkpoint_changelist", Checkpoint),
    ("admin:contexts_globalcontext_changelist", GlobalContext),
    ("admin:conflicts_contextconflict_changelist", ContextConflict),
    ("admin:agent_sessions_activesession_changelist", ActiveSession),
    ("admin:agent_sessions_sessionhandoff_changelist", SessionHandoff),
    ("admin:graph_taskrelationship_changelist", TaskRelationship),
]


@pytest.fixture
def projects(tools, make_task):
    """Two projects besides the default one, each with every kind of row: tasks (one in
    progress), a relationship, a live session, an ended one (its handoff), a conflict and
    a checkpoint; the api project also has a crashed session, which leaves a1 orphaned."""
    for project_id, name in NAMES.items():
        tools.ok("create_project", {"projectId": project_id, "name": name})
    for prefix, project_id in (("w", "web"), ("a", "api")):
        tools.ok("create_task", {"taskId": f"{prefix}1", "name": f"{project_id} one",
                                 "projectId": project_id, "status": "in_progress"})
        tools.ok("create_task", {"taskId": f"{prefix}2", "name": f"{project_id} two",
                                 "projectId": project_id})
        tools.ok("add_task_relationship", {"sourceTaskId": f"{prefix}1",
                                           "targetTaskId": f"{prefix}2",
                                           "relationshipType": "blocks"})
        tools.ok("start_session", {"sessionId": f"s-{project_id}", "taskId": f"{prefix}2"})
        tools.ok("heartbeat", {"sessionId": f"s-{project_id}"})
        tools.ok("start_session", {"sessionId": f"s-{project_id}-done",
                                   "projectId": project_id})
        tools.ok("end_session", {"sessionId": f"s-{project_id}-done",
                                 "summary": f"{project_id} handoff"})
        tools.ok("create_checkpoint", {"label": f"{project_id} cp", "taskId": f"{prefix}1"})
    tools.ok("report_conflict", {"taskAId": "w1", "taskBId": "w2", "severity": "high",
                                 "description": "web disagrees"})
    tools.ok("report_conflict", {"taskAId": "a1", "taskBId": "a2", "severity": "critical",
                                 "description": "api disagrees"})
    tools.ok("start_session", {"sessionId": "s-api-crash", "taskId": "a1"})
    recovery.mark_crashed("s-api-crash")
    make_task("d1")  # the default project's
    return tools


def switch(client, project: str, next_url: str | None = None):
    data = {"project": project}
    if next_url is not None:
        data["next"] = next_url
    return client.post(reverse("console_project"), data)


def listed_projects(client, url_name: str, **params) -> set[str]:
    response = client.get(reverse(url_name), params)
    assert response.status_code == 200, url_name
    return {row.project_id for row in response.context["cl"].result_list}


# -- the switcher -----------------------------------------------------------------------------

def test_the_switcher_is_on_every_admin_page(admin_client, projects):
    task = TaskContext.objects.get(task_id="a1")
    pages = [reverse("admin:index"), reverse("admin:graph_task_graph"),
             reverse("admin:contexts_taskcontext_change", args=[task.pk]),
             "/admin/contexts/taskcontext/not-a-task/change/"]
    pages += [reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
              for model in admin.site._registry]
    for url in pages:
        response = admin_client.get(url)
        html = response.content.decode()
        assert response.status_code in (200, 404), url
        assert 'id="project-switcher"' in html, url
        assert '<option value="" selected>All projects</option>' in html, url
        assert '<option value="web">Web shop</option>' in html, url
        assert '<option value="api">API server</option>' in html, url
        assert f'name="next" value="{url}"' in html, url


def test_the_switcher_costs_one_query_however_much_of_the_page_asks(admin_client, projects):
    url = reverse("admin:contexts_taskcontext_changelist")
    switch(admin_client, "web")
    with CaptureQueriesContext(connection) as queries:
        assert admin_client.get(url).status_code == 200
    assert sum(q["sql"].startswith('SELECT "projects"."id"')
               for q in queries.captured_queries) == 1


def test_the_login_page_has_no_switcher(client, db):
    html = client.get(reverse("admin:login")).content.decode()
    assert "project-switcher" not in html


def test_switching_remembers_the_project_and_goes_back(admin_client, projects):
    url = reverse("admin:contexts_taskcontext_changelist") + "?status__exact=pending"
    response = switch(admin_client, "web", url)
    assert response.status_code == 302 and response.url == url
    assert admin_client.session[SESSION_KEY] == "web"
    html = admin_client.get(url).content.decode()
    assert '<option value="web" selected>Web shop</option>' in html
    assert '<option value="" selected>' not in html

    response = switch(admin_client, "", url)
    assert response.status_code == 302 and SESSION_KEY not in admin_client.session
    assert '<option value="" selected>All projects</option>' in \
        admin_client.get(url).content.decode()


@pytest.mark.parametrize("next_url", [None, "", "https://evil.example/admin/",
                                      "//evil.example/", "javascript:alert(1)"])
def test_an_unsafe_or_missing_next_goes_to_the_overview(admin_client, projects, next_url):
    response = switch(admin_client, "api", next_url)
    assert response.status_code == 302 and response.url == reverse("admin:index")
    assert admin_client.session[SESSION_KEY] == "api"


@pytest.mark.parametrize("project", ["nope", "../web", "x" * 300])
def test_an_unknown_project_is_a_400_and_changes_nothing(admin_client, projects, project):
    switch(admin_client, "web")
    response = switch(admin_client, project, reverse("admin:index"))
    assert response.status_code == 400
    assert admin_client.session[SESSION_KEY] == "web"


def test_switching_is_a_post(admin_client, projects):
    assert admin_client.get(reverse("console_project"), {"project": "web"}).status_code == 405
    assert SESSION_KEY not in admin_client.session


def test_switching_needs_csrf(projects):
    from django.test import Client

    user = User.objects.create_superuser("csrf", "csrf@example.com", "pw")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert switch(client, "web").status_code == 403
    assert SESSION_KEY not in client.session


def test_non_staff_cannot_switch(client, projects):
    assert switch(client, "web").status_code == 302  # to the login page
    user = User.objects.create_user("visitor", password="pw")
    client.force_login(user)
    response = switch(client, "web", reverse("admin:index"))
    assert response.status_code == 302 and "/login/" in response.url
    assert SESSION_KEY not in client.session


def test_a_project_that_no_longer_exists_shows_all(admin_client, projects):
    session = admin_client.session
    session[SESSION_KEY] = "gone"
    session.save()
    assert listed_projects(admin_client, "admin:contexts_taskcontext_changelist") == \
        {"web", "api", DEFAULT}
    assert admin_client.get(reverse("console_overview")).json()["projectIds"] is None


# -- the lists --------------------------------------------------------------------------------

@pytest.mark.parametrize(("url_name", "model"), LISTS)
def test_each_list_follows_the_switcher(admin_client, projects, url_name, model):
    every = set(model.objects.values_list("project_id", flat=True))
    assert {"web", "api"} <= every
    assert listed_projects(admin_client, url_name) == every
    for project in ("web", "api"):
        switch(admin_client, project)
        assert listed_projects(admin_client, url_name) == {project}
    switch(admin_client, "")
    assert listed_projects(admin_client, url_name) == every


@pytest.mark.parametrize(("url_name", "model"), LISTS)
def test_each_list_names_the_projects(admin_client, projects, url_name, model):
    html = admin_client.get(reverse(url_name)).content.decode()
    assert "sortable column-project" in html  # the column, sorted by project id
    assert '<td class="field-project">Web shop</td>' in html
    assert '<td class="field-project">API server</td>' in html
    if model is GlobalContext:
        return  # one row per project: a filter by project would add nothing
    # The sidebar filter by project, by name, while all projects are shown.
    assert "?project_id__exact=web" in html and ">Web shop</a>" in html
    assert listed_projects(admin_client, url_name, project_id__exact="api") == {"api"}
    switch(admin_client, "web")
    assert "?project_id__exact=api" not in admin_client.get(reverse(url_name)).content.decode()


def test_the_project_column_costs_no_query_per_row(admin_client, projects):
    url = reverse("admin:contexts_taskcontext_changelist")

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get(url).status_code == 200
        return len(captured.captured_queries)

    before = queries()
    for n in range(5):
        projects.ok("create_task", {"taskId": f"more-{n}", "name": "more", "projectId": "api"})
    assert queries() == before


def test_sorting_by_project(admin_client, projects):
    url = reverse("admin:contexts_taskcontext_changelist")
    index = admin_client.get(url).context["cl"].list_display.index("project")
    rows = admin_client.get(url, {"o": str(index)}).context["cl"].result_list
    ids = [row.project_id for row in rows]
    assert ids == sorted(ids)


def test_bulk_actions_see_only_the_chosen_project(admin_client, projects):
    switch(admin_client, "web")
    url = reverse("admin:agent_sessions_activesession_changelist")
    pks = [str(pk) for pk in ActiveSession.objects.values_list("pk", flat=True)]
    response = admin_client.post(url, {"action": "end_sessions", "_selected_action": pks,
                                       "select_across": "0", "index": "0"})
    assert response.status_code == 302
    ended = set(ActiveSession.objects.filter(status="ended")
                .values_list("session_id", flat=True))
    assert "s-web" in ended and "s-api" not in ended


def test_conflict_task_filter_offers_the_chosen_project_s_tasks(admin_client, projects):
    url = reverse("admin:conflicts_contextconflict_changelist")
    html = admin_client.get(url).content.decode()
    assert "?task=w1" in html and "?task=a1" in html
    switch(admin_client, "api")
    html = admin_client.get(url).content.decode()
    assert "?task=a1" in html and "?task=w1" not in html


def test_single_rows_open_whatever_the_switcher_says(admin_client, projects):
    switch(admin_client, "web")
    pages = [
        reverse("admin:contexts_taskcontext_change",
                args=[TaskContext.objects.get(task_id="a1").pk]),
        reverse("admin:conflicts_contextconflict_change",
                args=[ContextConflict.objects.get(task_a_id="a1").pk]),
        reverse("admin:agent_sessions_activesession_change",
                args=[ActiveSession.objects.get(session_id="s-api").pk]),
        reverse("admin:contexts_globalcontext_change",
                args=[GlobalContext.objects.get(project_id="api").pk]),
        reverse("admin:contexts_checkpoint_change",
                args=[Checkpoint.objects.get(task_id="a1").pk]),
        reverse("admin:agent_sessions_sessionhandoff_change",
                args=[SessionHandoff.objects.get(project_id="api").pk]),
    ]
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == 200, url
    session_page = admin_client.get(pages[2]).content.decode()
    assert "API server" in session_page  # the session's project, by name


# -- the active-task marker ---------------------------------------------------------------------

def test_each_project_s_active_task_is_marked(admin_client, projects):
    projects.ok("switch_task", {"toTaskId": "w2"})
    projects.ok("switch_task", {"toTaskId": "a1"})
    assert GlobalContext.objects.get(project_id="web").active_task_id == "w2"
    assert GlobalContext.objects.get(project_id="api").active_task_id == "a1"
    html = admin_client.get(reverse("admin:contexts_taskcontext_changelist")).content.decode()
    rows = {task: row for row in html.split("<tr") for task in ("w1", "w2", "a1", "a2", "d1")
            if f'<code title="{task}">' in row}
    assert {task for task, row in rows.items() if "project's active task" in row} == \
        {"w2", "a1"}
    for task, active in (("a1", True), ("a2", False), ("w2", True)):
        pk = TaskContext.objects.get(task_id=task).pk
        page = admin_client.get(reverse("admin:contexts_taskcontext_change", args=[pk]))
        assert page.context["is_active"] is active, task


# -- the overview -------------------------------------------------------------------------------

def expected_overview(project_ids: list[str] | None) -> dict:
    sessions = ActiveSession.objects.all()
    conflicts = ContextConflict.objects.filter(resolution_status="unresolved")
    versions = ContextVersion.objects.filter(created_at__gte=timezone.now() - timedelta(hours=1))
    calls = ToolInvocation.objects.filter(timestamp__gte=timezone.now() - timedelta(hours=1))
    if project_ids is not None:
        sessions = sessions.filter(project_id__in=project_ids)
        conflicts = conflicts.filter(project_id__in=project_ids)
        versions = versions.filter(project_id__in=project_ids)
        calls = calls.filter(session_id__in=sessions.values("session_id"))
    return {
        "activeSessionCount": sessions.filter(status="active").count(),
        "recoveryCount": sessions.filter(recovery_needed=True).count(),
        "unresolvedTotal": conflicts.count(),
        "savesLastHour": versions.count(),
        "toolCallsLastHour": calls.count(),
    }


def figures(data: dict) -> dict:
    return {"activeSessionCount": data["activeSessionCount"],
            "recoveryCount": data["recoveryCount"],
            "unresolvedTotal": data["conflicts"]["unresolvedTotal"],
            "savesLastHour": data["activity"]["savesLastHour"],
            "toolCallsLastHour": data["activity"]["toolCallsLastHour"]}


def test_the_overview_json_follows_the_switcher(admin_client, projects):
    url = reverse("console_overview")
    every = admin_client.get(url).json()
    assert every["projectIds"] is None
    assert figures(every) == expected_overview(None)
    assert {s["sessionId"] for s in every["activeSessions"]} == {"s-web", "s-api"}
    assert {t["taskId"] for t in every["orphanedTasks"]} == {"a1"}
    assert {s["projectName"] for s in every["activeSessions"]} == {"Web shop", "API server"}

    switch(admin_client, "web")
    web = admin_client.get(url).json()
    assert web["projectIds"] == ["web"]
    assert figures(web) == expected_overview(["web"])
    assert [s["sessionId"] for s in web["activeSessions"]] == ["s-web"]
    assert web["recovery"] == [] and web["recoveryCount"] == 0
    assert web["conflicts"]["unresolved"] == {"critical": 0, "high": 1, "medium": 0, "low": 0}
    assert (web["orphanedTasks"], web["orphanedTaskCount"]) == ([], 0)
    assert web["jobs"] == every["jobs"] and web["cache"]["available"] is True  # global

    switch(admin_client, "api")
    api = admin_client.get(url).json()
    assert figures(api) == expected_overview(["api"])
    assert [s["sessionId"] for s in api["recovery"]] == ["s-api-crash"]
    assert api["conflicts"]["unresolved"]["critical"] == 1
    assert [t["taskId"] for t in api["orphanedTasks"]] == ["a1"]


def test_the_overview_page_and_fragment_follow_the_switcher(admin_client, projects):
    fragment_url = reverse("console_overview_fragment")
    every = admin_client.get(fragment_url).content.decode()
    assert 'id="active-session-count">2<' in every and 'id="recovery-count">1<' in every
    assert '<td class="project">Web shop</td>' in every  # rows say their project
    assert "of <span id=\"overview-project\">all projects" in \
        admin_client.get(reverse("admin:index")).content.decode()

    switch(admin_client, "web")
    fragment = admin_client.get(fragment_url).content.decode()
    assert 'id="active-session-count">1<' in fragment and 'id="recovery-count">0<' in fragment
    assert 'id="conflicts-unresolved">1<' in fragment and 'id="conflicts-critical"' in fragment
    assert "s-web" in fragment and "s-api" not in fragment
    # Orphaned tasks are listed by name, the id (shortened, whole in its title) beside it.
    orphan = '<ul id="orphaned-tasks">'
    assert 'title="a1"' not in fragment.split(orphan)[1].split("</ul>")[0]
    assert 'id="orphaned-count">0<' in fragment
    assert 'title="a1"' in every.split(orphan)[1].split("</ul>")[0]  # api's orphaned work
    assert '<td class="project">' not in fragment  # one project: no column for it
    index = admin_client.get(reverse("admin:index")).content.decode()
    assert '<strong id="overview-project">Web shop</strong>' in index
    assert 'id="active-session-count">1<' in index


def test_fleet_overview_takes_the_projects(projects):
    from console.services.overview import fleet_overview

    assert figures(fleet_overview(["api", "web"])) == expected_overview(["api", "web"])
    assert fleet_overview([DEFAULT])["activeSessionCount"] == 0
    assert fleet_overview(None)["activeSessionCount"] == 2


# -- the task graph -----------------------------------------------------------------------------

def test_the_task_graph_shows_the_chosen_project(admin_client, projects):
    url = reverse("admin:graph_task_graph")
    every = admin_client.get(url).context
    assert {"w1", "w2", "a1", "a2", "d1"} <= {n["taskId"] for n in every["graph"]["nodes"]}
    switch(admin_client, "web")
    page = admin_client.get(url)
    assert page.status_code == 200
    graph = page.context["graph"]
    assert {n["taskId"] for n in graph["nodes"]} == {"w1", "w2"}
    assert [(e["from"], e["to"]) for e in graph["edges"]] == [("w1", "w2")]
    assert [tid for tid, _ in page.context["tasks"]] == ["w1", "w2"]
    assert "Task graph of Web shop" in page.content.decode()
    # A task of another project still opens (its neighbourhood is its own project's).
    focus = admin_client.get(url, {"taskId": "a1", "depth": 1})
    assert focus.status_code == 200
    assert {n["taskId"] for n in focus.context["graph"]["nodes"]} == {"a1", "a2"}
