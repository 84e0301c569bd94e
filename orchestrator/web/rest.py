"""``POST /api/v1/tools/<name>/`` in the OpenAPI document: one generated DRF view per tool.

Each view carries its tool's JSON Schemas into the document, so /api/docs/ shows every
tool's request and response exactly as MCP's tools/list does. The calls themselves are
answered by ``orchestrator.web.fastlane.answer`` (see ``ToolView``).
"""

from __future__ import annotations

from django.urls import path
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.response import Response
from rest_framework.views import APIView

from foundation.core.errors import REGISTRY as ERROR_CODES
from foundation.core.projects import CLIENT_PROJECT_HEADER
from foundation.core.tools import registry
from orchestrator.web import fastlane
from orchestrator.web.openapi import TOO_LARGE


class ToolView(APIView):
    """Describes one tool for the OpenAPI document. Production never reaches it (the ASGI
    router hands tool calls to ``fastlane``); under WSGI it answers with the same
    function, so there is one implementation of a REST tool call."""

    tool_name: str = ""
    # Every status an error can have (the E16xx registry's, and 413 for an oversized body):
    # any tool can meet an outage or a server fault, not only its own business errors.
    # orchestrator.web.openapi documents them with the spec's error object.
    ERROR_STATUSES = sorted({entry.http_status for entry in ERROR_CODES.values()} | {TOO_LARGE})
    # fastlane.answer counts the call against the token's rate limit itself.
    throttle_classes: list = []

    def post(self, request, *args, **kwargs):
        status, body, headers = fastlane.answer(
            self.tool_name, request.META.get("HTTP_AUTHORIZATION"), request.body,
            request.headers.get(CLIENT_PROJECT_HEADER))
        return Response(body, status=status, headers=headers)


def _view_for(tool: registry.Tool):
    decorated = extend_schema(
        operation_id=tool.name,
        summary=tool.description.split("\n", 1)[0][:120],
        description=tool.description,
        tags=["tools"],
        request={"application/json": tool.input_schema},
        responses={200: OpenApiResponse(tool.output_schema, description="Tool output"),
                   # A call held while Postgres is unreachable (save_context_snapshot).
                   **({202: OpenApiResponse(tool.output_schema, description=(
                       "Held while PostgreSQL is unreachable: pending true, applied when "
                       "it is back"))} if tool.when_database_down else {})},
    )

    # A fresh function per tool: extend_schema stores its data on the function object.
    def post(self, request, *args, **kwargs):
        return ToolView.post(self, request, *args, **kwargs)

    view = type(f"{tool.name.title().replace('_', '')}ToolView", (ToolView,),
                {"tool_name": tool.name, "post": decorated(post)})
    return view.as_view()


def tool_urlpatterns():
    return [path(f"{tool.name}/", _view_for(tool), name=f"tool-{tool.name}")
            for tool in registry.tools()]
