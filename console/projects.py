"""The console's project switcher: which project the signed-in operator looks at.

The choice lives in the user's session (``SESSION_KEY``), set only by the switcher's form
(``console.views.switch_project``); no page takes a project from its address. List pages,
the overview and the task graph read it through ``selected_project_ids``; a change page
opens whatever the switcher says.

The project list is read once per request, on first use (the switcher in the header, a
"Project" column, a list filter), and kept on the request: one query however many parts
of the page ask, and none for requests that never render a console page.
"""

from __future__ import annotations

from django.http import HttpRequest

from foundation.core.models import Project

SESSION_KEY = "console_project"
_CACHE_ATTRIBUTE = "_console_project_names"


def project_names(request: HttpRequest | None) -> dict[str, str]:
    """Every project's name by id, ordered by name (then id); one query per request."""
    names = getattr(request, _CACHE_ATTRIBUTE, None) if request is not None else None
    if names is None:
        names = dict(Project.objects.order_by("name", "id").values_list("id", "name"))
        if request is not None:
            setattr(request, _CACHE_ATTRIBUTE, names)
    return names


def selected_project(request: HttpRequest | None) -> str | None:
    """The project the switcher is set to; None for "All projects" (also when the chosen
    project no longer exists)."""
    session = getattr(request, "session", None)
    chosen = session.get(SESSION_KEY) if session is not None else None
    if not chosen or not isinstance(chosen, str):
        return None
    return chosen if chosen in project_names(request) else None


def selected_project_ids(request: HttpRequest | None) -> list[str] | None:
    """The projects the console's lists show: [the chosen one], or None for all of them."""
    chosen = selected_project(request)
    return None if chosen is None else [chosen]


def choose(request: HttpRequest, project_id: str | None) -> None:
    """Set the switcher to ``project_id`` (an existing project's id) or to all projects."""
    if project_id:
        request.session[SESSION_KEY] = project_id
    else:
        request.session.pop(SESSION_KEY, None)
