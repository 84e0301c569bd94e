"""What the console and /api/docs/ load comes from this server (issue 23, items 3 and 4):
Swagger UI from drf-spectacular-sidecar, the layout from the console's own stylesheet.
tests/browser/test_console_layout.py renders both in chromium with the network refused."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


def test_api_docs_load_swagger_ui_from_the_package_not_a_cdn(admin_client):
    page = admin_client.get("/api/docs/").content.decode()
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in assets
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui.css" in assets
    assert all(asset.startswith("/") for asset in assets), assets
    for asset in assets:
        response = admin_client.get(asset)
        assert response.status_code == 200, asset
        assert b"".join(response.streaming_content), asset  # served by whitenoise


def test_every_admin_page_links_the_console_stylesheet(admin_client):
    for url in (reverse("admin:index"), reverse("admin:contexts_taskcontext_changelist"),
                reverse("admin:graph_task_graph")):
        page = admin_client.get(url).content.decode()
        assert '<link rel="stylesheet" href="/static/console/console.css">' in page, url
    css = admin_client.get("/static/console/console.css")
    assert css.status_code == 200
    assert b"overflow-wrap: anywhere" in b"".join(css.streaming_content)
