"""``{% project_switcher %}``: the project switcher in the header of every admin page
(templates/admin/base_site.html). Rendered only on admin pages, for signed-in staff; the
project list comes from ``console.projects`` (one query per request, shared with the
page's lists)."""

from __future__ import annotations

from typing import Any

from django import template

from console.projects import project_names, selected_project

register = template.Library()


@register.inclusion_tag("console/_project_switcher.html", takes_context=True)
def project_switcher(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    if request is None:
        return {"show": False}
    return {
        "show": True,
        "projects": list(project_names(request).items()),
        "selected": selected_project(request) or "",
        "next": request.get_full_path(),
        "csrf_token": context.get("csrf_token"),
    }
