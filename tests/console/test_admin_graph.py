"""The task-graph page of the console (console/admin/graph.py) on both graph backends: ready
and blocked lists, staff only, the drawing library shipped with the app (no CDN)."""

from __future__ import annotations

import re
from pathlib import Path

from django.contrib.staticfiles import finders
from django.urls import reverse

from contexts.models import TaskContext


def test_admin_task_graph_page(graph, admin_client):
    graph.task("a")
    graph.task("b")
    graph.task("c", status="completed")
    graph.relate("a", "b", "blocks")
    url = reverse("admin:graph_task_graph")
    page = admin_client.get(url, {"taskId": "b", "depth": 1})
    assert page.status_code == 200
    html = page.content.decode()
    assert "graph/vendor/cytoscape.min.js" in html and "task-graph-data" in html
    # Every script and stylesheet comes from this server (a random CSRF token may spell "cdn").
    assets = re.findall(r'<(?:script[^>]*\bsrc|link[^>]*\bhref)="([^"]+)"', html)
    assert "/static/graph/vendor/cytoscape.min.js" in assets
    assert all(asset.startswith("/") and not asset.startswith("//") for asset in assets), assets
    a_pk = TaskContext.objects.get(task_id="a").pk
    b_pk = TaskContext.objects.get(task_id="b").pk
    ready = html.split('id="ready-tasks"')[1].split("</ul>")[0]
    blocked = html.split('id="blocked-tasks"')[1].split("</ul>")[0]
    assert reverse("admin:contexts_taskcontext_change", args=[a_pk]) in ready
    assert reverse("admin:contexts_taskcontext_change", args=[b_pk]) in blocked
    assert page.context["graph"]["metadata"]["source"] == graph.backend
    whole = admin_client.get(url, {"includeCompleted": "on"})
    assert [n["taskId"] for n in whole.context["graph"]["nodes"]] == ["a", "b", "c"]
    missing = admin_client.get(url, {"taskId": "nope"})
    assert missing.status_code == 404 and "Page not found" in missing.content.decode()


def test_admin_page_needs_staff(client, db):
    response = client.get(reverse("admin:graph_task_graph"))
    assert response.status_code == 302 and "/login/" in response["Location"]


def test_graph_library_is_shipped():
    library = finders.find("graph/vendor/cytoscape.min.js")
    assert library and Path(library).stat().st_size > 100_000
    assert finders.find("graph/task_graph.js")
