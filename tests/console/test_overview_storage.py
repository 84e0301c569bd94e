"""The overview's storage (issue 22 item 4): each project's bytes of task versions and
checkpoints against STORAGE_QUOTA_BYTES, in overview.json, the page and its fragment,
following the project switcher; figures recomputed from the tables."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.console.test_projects import switch
from tests.contexts.test_storage_quota import stored_bytes

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(tools, make_task):
    tools.ok("create_project", {"projectId": "st-web", "name": "Web"})
    make_task("st-a", immediateContext={"notes": "a" * 4000})
    tools.ok("save_context_snapshot", {"taskId": "st-a", "updates": {"iteration": 2}})
    tools.ok("create_checkpoint", {"label": "cp", "taskId": "st-a"})
    make_task("st-w", projectId="st-web")
    return tools


def test_overview_json_shows_use_against_the_limit(admin_client, stored, settings):
    settings.STORAGE_QUOTA_BYTES = 100_000
    data = admin_client.get(reverse("console_overview")).json()["storage"]
    default, web = settings.MCP_PROJECT_ID, "st-web"
    assert data["limitBytes"] == 100_000
    by_project = {row["projectId"]: row for row in data["projects"]}
    assert by_project[default]["usedBytes"] == stored_bytes(default) > 0
    assert by_project[web]["usedBytes"] == stored_bytes(web) > 0
    assert by_project[default]["percent"] == round(100 * stored_bytes(default) / 100_000, 1)
    # Fullest first; the total is what the listed projects store.
    assert data["projects"][0]["projectId"] == default
    assert data["usedBytes"] == sum(row["usedBytes"] for row in data["projects"])
    assert data["fullest"] == by_project[default]["percent"]
    assert data["warn"] is (data["fullest"] >= 80)
    switch(admin_client, web)
    only = admin_client.get(reverse("console_overview")).json()["storage"]
    assert [row["projectId"] for row in only["projects"]] == [web]
    assert only["usedBytes"] == stored_bytes(web)


def test_a_project_near_its_limit_is_flagged_and_no_limit_shows_none(admin_client, stored,
                                                                     settings):
    settings.STORAGE_QUOTA_BYTES = stored_bytes(settings.MCP_PROJECT_ID) + 10
    data = admin_client.get(reverse("console_overview")).json()["storage"]
    assert data["warn"] is True and data["fullest"] >= 99
    for url in (reverse("admin:index"), reverse("console_overview_fragment")):
        page = admin_client.get(url).content.decode()
        assert 'id="storage"' in page and "attention" in page.split('id="storage"')[0][-80:]
        assert 'id="storage-projects"' in page and "st-web" in page
        assert "severity-high" in page
    settings.STORAGE_QUOTA_BYTES = 0
    data = admin_client.get(reverse("console_overview")).json()["storage"]
    assert data["limitBytes"] == 0 and data["fullest"] is None and data["warn"] is False
    assert all(row["percent"] is None for row in data["projects"])
    page = admin_client.get(reverse("console_overview_fragment")).content.decode()
    assert 'id="storage-limit">none<' in page
