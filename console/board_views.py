"""The home page's agent board and "needs you" queue: its JSON feed (the page polls it) and
the queue's action endpoint. Both go through ``admin_view`` (staff only, CSRF-checked
POSTs): the browser's own login is the authentication, no token.

The board shows the project the header's switcher is set to (all projects by default);
the page's own project filter narrows what is shown further, in the browser.
"""

from __future__ import annotations

import json
from typing import Any

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from console.projects import project_names, selected_project_ids
from console.services import actions
from console.services.board import board, crashed_session_prompt
from foundation.core.errors import OrchestratorError

# The page re-reads the board this often (tests shorten it).
REFRESH_SECONDS = 5
SESSION_PAGE = "admin:agent_sessions_activesession_change"


def _with_links(data: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    """The board plus the projects' names and the admin pages its rows link to."""
    for row in data["rows"]:
        row["projectName"] = names.get(row["projectId"], row["projectId"])
        row["url"] = reverse(SESSION_PAGE, args=[row["pk"]])
    for item in data["queue"]:
        item["projectName"] = names.get(item["projectId"], item["projectId"])
        if item.get("sessionPk"):
            item["url"] = reverse(SESSION_PAGE, args=[item["sessionPk"]])
        elif item.get("conflictId"):
            item["url"] = reverse("admin:conflicts_contextconflict_change",
                                  args=[item["conflictId"]])
        elif item.get("taskPk"):
            item["url"] = reverse("admin:contexts_taskcontext_change", args=[item["taskPk"]])
    data["projects"] = [{"id": key, "name": name} for key, name in names.items()]
    return data


def board_data(request: HttpRequest) -> dict[str, Any]:
    return _with_links(board(selected_project_ids(request)), project_names(request))


def board_context(request: HttpRequest) -> dict[str, Any]:
    """What the home page's template needs: the board as of now (rendered at once by the
    page's script, then polled) and the poll's period."""
    data = board_data(request)
    return {"board": data, "board_refresh_seconds": REFRESH_SECONDS}


@require_GET
def board_json(request: HttpRequest) -> JsonResponse:
    response = JsonResponse(board_data(request))
    response["Cache-Control"] = "no-store"
    return response


@require_GET
def board_prompt(request: HttpRequest) -> JsonResponse:
    """?sessionId=: the resume prompt of a crashed session, for the queue's copy button."""
    try:
        session_id = request.GET.get("sessionId") or ""
        if not session_id:
            raise OrchestratorError("E1612", "sessionId is required", {"field": "sessionId"})
        return JsonResponse({"success": True, "sessionId": session_id,
                             "prompt": crashed_session_prompt(session_id)})
    except OrchestratorError as exc:
        return JsonResponse(exc.to_dict(), status=exc.http_status)


@require_POST
def board_act(request: HttpRequest) -> JsonResponse:
    """One queue action: body {action, ...}; the answer {success, action, message} or the
    error's {success: false, error: {code, message, details}} with its HTTP status."""
    try:
        try:
            body = json.loads(request.body or b"")
        except ValueError:
            raise OrchestratorError("E1612", "The body must be JSON") from None
        operator = actions.Operator(request.user.pk, request.user.get_username())
        return JsonResponse(actions.perform(operator, body, request.user.has_perm))
    except OrchestratorError as exc:
        return JsonResponse(exc.to_dict(), status=exc.http_status)
