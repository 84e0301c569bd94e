"""A ModelAdmin instance is shared by every thread of the web server: rendering a page must
leave no per-request state on it (the task list once kept the active and orphaned tasks
of the last request on the instance, where another thread's request could read them)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_no_admin_page_leaves_state_on_its_shared_instance(admin_client, tools):
    tools.ok("create_task", {"taskId": "st-1", "name": "State"})
    tools.ok("switch_task", {"toTaskId": "st-1"})
    for model, model_admin in admin.site._registry.items():
        before = dict(vars(model_admin))
        url = reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
        assert admin_client.get(url).status_code in (200, 302), url
        assert vars(model_admin) == before, f"{type(model_admin).__name__} kept state"


def test_the_task_list_marks_come_with_its_rows(admin_client, tools):
    tools.ok("create_task", {"taskId": "st-a", "name": "Active one"})
    tools.ok("create_task", {"taskId": "st-b", "name": "Other one"})
    tools.ok("switch_task", {"toTaskId": "st-a"})
    page = admin_client.get(reverse("admin:contexts_taskcontext_changelist")).content.decode()
    rows = {line for line in page.split("<tr") if "st-a" in line or "st-b" in line}
    assert any("st-a" in row and "project's active task" in row for row in rows)
    assert not any("st-b" in row and "project's active task" in row for row in rows)
