"""The global context's console page (console/admin/global_context.py): JSON form, diff and
rollback, through the test client."""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.urls import reverse

from contexts.models import GlobalContext, GlobalContextVersion

pytestmark = pytest.mark.django_db


def project() -> GlobalContext:
    return GlobalContext.objects.get(project_id=settings.MCP_PROJECT_ID)


def form_data(row: GlobalContext, **overrides) -> dict[str, str]:
    data = {"project_name": row.project_name, "description": row.description or "",
            "hard_rules": json.dumps(row.hard_rules), "tech_stack": json.dumps(row.tech_stack),
            "key_paths": json.dumps(row.key_paths), "services": json.dumps(row.services),
            "orchestrator_context": json.dumps(row.orchestrator_context or {})}
    return {**data, **overrides}


def change_url(row: GlobalContext) -> str:
    return reverse("admin:contexts_globalcontext_change", args=[row.pk])


def test_form_saves_a_version_through_the_tool(admin_client):
    row = project()
    response = admin_client.post(change_url(row), form_data(
        row, hard_rules='["No force pushes"]', services='{"db": "localhost:5432"}',
        change_summary="from the console"))
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.hard_rules == ["No force pushes"] and row.services == {"db": "localhost:5432"}
    latest = GlobalContextVersion.objects.filter(context_id=row.pk).order_by("-version")[0]
    assert (latest.version, latest.change_summary, latest.created_by) == \
        (row.version, "from the console", "admin:admin")
    page = admin_client.get(change_url(row)).content.decode()
    assert "Saved: hardRules, services" in page and "No force pushes" in page


@pytest.mark.parametrize("field, value, expected", [
    ("hard_rules", "[not json", "hardRules: not valid JSON"),
    ("key_paths", '["a list"]', "keyPaths"),
    ("tech_stack", "[1, 2]", "techStack"),
])
def test_bad_input_is_shown_with_e1612_and_changes_nothing(admin_client, field, value,
                                                           expected):
    row = project()
    response = admin_client.post(change_url(row), form_data(row, **{field: value}))
    html = response.content.decode()
    assert response.status_code == 400
    assert 'id="form-error"' in html and "E1612" in html and expected in html
    assert value.replace('"', "&quot;") in html  # the typed text is kept for correction
    assert project().version == row.version


def test_diff_and_rollback_pages(admin_client, tools):
    tools.ok("update_global_context", {"techStack": ["Django"]})
    first = project().version
    tools.ok("update_global_context", {"techStack": ["Flask"]})
    row = project()
    diff = admin_client.get(change_url(row), {"diff": first}).content.decode()
    assert 'id="global-diff"' in diff and "Flask" in diff and "Django" in diff
    url = reverse("admin:contexts_globalcontext_rollback", args=[row.pk])
    confirm = admin_client.get(url, {"version": first})
    assert confirm.status_code == 200 and 'id="rollback-changes"' in confirm.content.decode()
    assert project().version == row.version  # showing the confirmation changed nothing
    done = admin_client.post(url, {"version": first})
    assert done.status_code == 302
    assert project().tech_stack == ["Django"] and project().version == row.version + 1


def test_read_only_staff_sees_no_form_buttons(client, db):
    from django.contrib.auth.models import Permission, User

    user = User.objects.create(username="viewer", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_globalcontext"))
    client.force_login(user)
    row = project()
    page = client.get(change_url(row))
    assert page.status_code == 200 and "Save a new version" not in page.content.decode()
    assert client.post(change_url(row), form_data(row, tech_stack='["x"]')).status_code == 403
    url = reverse("admin:contexts_globalcontext_rollback", args=[row.pk])
    assert client.get(url, {"version": 1}).status_code == 403
