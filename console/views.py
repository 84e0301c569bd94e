"""The console's pages: the admin index with the fleet overview, and its two feeds.

``index`` is the admin's own index view with the overview added to its context; the page
polls ``overview_fragment`` (the same partial, re-rendered) and machines read
``overview_json``. All three go through ``admin_view``: staff only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from console.services.overview import fleet_overview

CHART_WIDTH, CHART_HEIGHT = 360, 60
REFRESH_SECONDS = 5


def _chart(minutes: list[dict[str, Any]]) -> dict[str, Any]:
    """Bar geometry for the per-minute chart (two bars per minute: saves, tool calls)."""
    top = max([1, *(m["saves"] for m in minutes), *(m["toolCalls"] for m in minutes)])
    slot = CHART_WIDTH / len(minutes)
    bars = []
    for index, minute in enumerate(minutes):
        for offset, key in ((0.0, "saves"), (0.5, "toolCalls")):
            height = round(minute[key] / top * CHART_HEIGHT, 1)
            bars.append({"x": round(index * slot + offset * slot, 1), "y": CHART_HEIGHT - height,
                         "width": round(slot / 2 - 0.5, 2), "height": height, "series": key,
                         "title": f"{minute['minute'][11:16]} {key}: {minute[key]}"})
    return {"width": CHART_WIDTH, "height": CHART_HEIGHT, "top": top, "bars": bars}


def _with_links(overview: dict[str, Any]) -> dict[str, Any]:
    """The overview plus the admin URLs the page links to."""
    session_url = "admin:agent_sessions_activesession_change"
    for row in overview["activeSessions"] + overview["recovery"]:
        row["url"] = reverse(session_url, args=[row["pk"]])
    for row in overview["recovery"]:
        row["promptUrl"] = row["url"] + "#resume-prompt"
    for row in overview["orphanedTasks"]:
        row["url"] = reverse("admin:contexts_taskcontext_change", args=[row["pk"]])
    runs = reverse("admin:orchestrator_jobrun_changelist")
    for job in overview["jobs"]:
        job["url"] = f"{runs}?{urlencode({'job_name': job['name']})}"
    conflicts = reverse("admin:conflicts_contextconflict_changelist")
    overview["conflicts"]["url"] = conflicts + "?resolution_status__exact=unresolved"
    overview["conflicts"]["escalatedUrl"] = conflicts + "?resolution_status__exact=escalated"
    return overview


def _overview_context() -> dict[str, Any]:
    overview = _with_links(fleet_overview())
    return {"overview": overview, "chart": _chart(overview["activity"]["minutes"]),
            "refresh_seconds": REFRESH_SECONDS}


def index(request: HttpRequest) -> HttpResponse:
    """The admin index (app list included) with the fleet overview on top."""
    return admin.site.index(request, extra_context=_overview_context())


def overview_fragment(request: HttpRequest) -> HttpResponse:
    return TemplateResponse(request, "console/_overview.html", _overview_context())


def overview_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse(_with_links(fleet_overview()))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: under /admin/ the admin's own page (header, breadcrumbs), else Django's."""
    from django.views.defaults import page_not_found

    if not request.path.startswith(reverse("admin:index")):
        return page_not_found(request, exception)
    context = {**admin.site.each_context(request), "title": "Page not found",
               "request_path": request.path}
    response = TemplateResponse(request, "admin/404.html", context, status=404)
    return response.render()
