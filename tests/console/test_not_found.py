"""Unknown or malformed ids in any admin URL: 404 with the admin's own page, never a 500."""

from __future__ import annotations

import uuid

import pytest
from django.contrib import admin
from django.urls import reverse

from contexts.models import GlobalContext, TaskContext

pytestmark = pytest.mark.django_db

MALFORMED = "not-a-valid-id"
# A well-formed id no row has. Fixed, not random: parallel workers must collect the same
# test ids (pytest-xdist compares them).
UNKNOWN_UUID = str(uuid.UUID(int=404, version=4))


def unknown_id(model) -> str:
    field = model._meta.pk
    if field.get_internal_type() == "UUIDField":
        return UNKNOWN_UUID
    if field.get_internal_type() in ("AutoField", "BigAutoField", "IntegerField"):
        return "987654321"
    return "no-such-key"


def assert_admin_404(response) -> None:
    html = response.content.decode()
    assert response.status_code == 404, response.status_code
    assert "Page not found" in html and 'id="site-name"' in html  # the admin's own header


def model_admin_urls():
    for model in admin.site._registry:
        info = model._meta.app_label, model._meta.model_name
        for page in ("change", "history", "delete"):
            for object_id in (MALFORMED, unknown_id(model)):
                yield pytest.param(f"admin:{info[0]}_{info[1]}_{page}", object_id,
                                   id=f"{info[1]}-{page}-{object_id[:8]}")


@pytest.mark.parametrize("url_name, object_id", list(model_admin_urls()))
def test_every_model_page_answers_404_for_a_bad_id(admin_client, url_name, object_id):
    assert_admin_404(admin_client.get(reverse(url_name, args=[object_id])))


@pytest.mark.parametrize("object_id", [MALFORMED, UNKNOWN_UUID])
def test_task_rollback_page(admin_client, object_id):
    url = reverse("admin:contexts_taskcontext_rollback", args=[object_id])
    assert_admin_404(admin_client.get(url, {"type": "version", "version": 1}))
    assert_admin_404(admin_client.post(url, {"type": "version", "version": 1}))


@pytest.mark.parametrize("object_id", [MALFORMED, UNKNOWN_UUID])
def test_global_context_rollback_page_bad_row(admin_client, object_id):
    url = reverse("admin:contexts_globalcontext_rollback", args=[object_id])
    assert_admin_404(admin_client.get(url, {"version": 1}))


@pytest.mark.parametrize("version", ["abc", "", "999"])
def test_global_context_rollback_page_bad_version(admin_client, version):
    row = GlobalContext.objects.get()
    url = reverse("admin:contexts_globalcontext_rollback", args=[row.pk])
    assert_admin_404(admin_client.get(url, {"version": version}))


def test_task_graph_with_an_unknown_task(admin_client):
    assert_admin_404(admin_client.get(reverse("admin:graph_task_graph"), {"taskId": "nope"}))


def test_unknown_admin_path(admin_client):
    assert_admin_404(admin_client.get("/admin/no/such/page/"))


def test_task_change_page_with_a_diff_of_a_bad_version_is_not_an_error(admin_client, tools):
    tools.ok("create_task", {"taskId": "nf-1", "name": "n"})
    task = TaskContext.objects.get(task_id="nf-1")
    page = admin_client.get(reverse("admin:contexts_taskcontext_change", args=[task.pk]),
                            {"diff": "x"})
    assert page.status_code == 200


def test_outside_the_admin_django_s_plain_404(client, db):
    response = client.get("/no-such-page")
    assert response.status_code == 404 and "site-name" not in response.content.decode()
