"""The console's own pages beside the admin's model pages: claims and locks (who holds which
file, since when, on which task) and projects with their counts. Staff only (mounted
through ``admin_view`` in console/urls.py); both show the switcher's project."""

from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from console.projects import project_names, selected_project, selected_project_ids
from console.services.work_now import claims_and_locks, project_counts


def claims_page(request: HttpRequest) -> HttpResponse:
    """Claims and locks; ``?path=``, ``?task=``, ``?session=`` narrow the claims (the
    conflict and task pages link here with one of them)."""
    narrow = {key: request.GET.get(key, "").strip() for key in ("path", "task", "session")}
    listing = claims_and_locks(selected_project_ids(request), path=narrow["path"] or None,
                               task_id=narrow["task"] or None,
                               session_id=narrow["session"] or None)
    names = project_names(request)
    for row in listing["claims"]:
        row["projectName"] = names.get(row["projectId"], row["projectId"])
    return TemplateResponse(request, "console/claims.html", {
        **admin.site.each_context(request), "title": "Claims and locks",
        "listing": listing, "narrow": {k: v for k, v in narrow.items() if v},
        "all_projects": selected_project(request) is None})


def projects_page(request: HttpRequest) -> HttpResponse:
    """Every project with its counts; "Show" sets the switcher to it."""
    return TemplateResponse(request, "console/projects.html", {
        **admin.site.each_context(request), "title": "Projects",
        "projects": project_counts(project_names(request)),
        "selected": selected_project(request) or ""})
