"""The console's pages: the admin index with the fleet overview, its two feeds, and the
project switcher's form target.

``index`` is the admin's own index view with the overview added to its context; the page
polls ``overview_fragment`` (the same partial, re-rendered) and machines read
``overview_json``. All three show the project the switcher is set to (``switch_project``
sets it, in the user's session). Every view goes through ``admin_view``: staff only.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseRedirect,
    JsonResponse,
)
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from console.board_views import board_context
from console.projects import choose, project_names, selected_project, selected_project_ids
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


def _with_links(overview: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The overview plus the admin URLs the page links to and the projects' names."""
    session_url = "admin:agent_sessions_activesession_change"
    for row in overview["activeSessions"] + overview["recovery"]:
        row["url"] = reverse(session_url, args=[row["pk"]])
    for row in overview["recovery"]:
        row["promptUrl"] = row["url"] + "#resume-prompt"
    for row in overview["orphanedTasks"]:
        row["url"] = reverse("admin:contexts_taskcontext_change", args=[row["pk"]])
    for row in overview["activeSessions"] + overview["recovery"] + overview["orphanedTasks"]:
        row["projectName"] = names.get(row["projectId"], row["projectId"])
    runs = reverse("admin:orchestrator_jobrun_changelist")
    for job in overview["jobs"]:
        job["url"] = f"{runs}?{urlencode({'job_name': job['name']})}"
    claims = reverse("console_claims")
    overview["fileClaims"]["url"] = claims
    for row in overview["fileClaims"]["contested"]:
        row["url"] = f"{claims}?{urlencode({'path': row['path']})}"
    conflicts = reverse("admin:conflicts_contextconflict_changelist")
    overview["conflicts"]["url"] = conflicts + "?resolution_status__exact=unresolved"
    overview["conflicts"]["escalatedUrl"] = conflicts + "?resolution_status__exact=escalated"
    return overview


def _overview(request: HttpRequest) -> dict[str, Any]:
    """The overview of the switcher's project (of every project for "All projects")."""
    return _with_links(fleet_overview(selected_project_ids(request)), project_names(request))


def _overview_context(request: HttpRequest) -> dict[str, Any]:
    overview = _overview(request)
    project = selected_project(request)
    return {"overview": overview, "chart": _chart(overview["activity"]["minutes"]),
            "refresh_seconds": REFRESH_SECONDS,
            "overview_project": project_names(request)[project] if project else None}


def index(request: HttpRequest) -> HttpResponse:
    """The admin index: the agent board and its "needs you" queue on top, the fleet
    overview and the app list under them."""
    return admin.site.index(request, extra_context={**_overview_context(request),
                                                    **board_context(request)})


def overview_fragment(request: HttpRequest) -> HttpResponse:
    return TemplateResponse(request, "console/_overview.html", _overview_context(request))


def overview_json(request: HttpRequest) -> JsonResponse:
    return JsonResponse(_overview(request))


@require_POST
def switch_project(request: HttpRequest) -> HttpResponse:
    """The switcher's form: ``project`` (a project's id, or empty for all projects) into the
    user's session, then back to ``next`` (the page the form was on) when it is a URL of
    this site, else to the overview. An unknown project is a 400 and changes nothing."""
    project_id = request.POST.get("project", "")
    if project_id and project_id not in project_names(request):
        return HttpResponseBadRequest("Unknown project: choose one from the list.",
                                      content_type="text/plain; charset=utf-8")
    choose(request, project_id or None)
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()},
                                           require_https=request.is_secure()):
        target = reverse("admin:index")
    return HttpResponseRedirect(target)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: under /admin/ the admin's own page (header, breadcrumbs), else Django's."""
    from django.views.defaults import page_not_found

    if not request.path.startswith(reverse("admin:index")):
        return page_not_found(request, exception)
    context = {**admin.site.each_context(request), "title": "Page not found",
               "request_path": request.path}
    response = TemplateResponse(request, "admin/404.html", context, status=404)
    return response.render()
