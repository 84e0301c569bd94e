"""DRF glue: bearer-token authentication for the browsing API and the OpenAPI document,
and the exception handler that gives every API failure the spec's error format."""

from __future__ import annotations

import logging
import math

from django.core.exceptions import RequestDataTooBig
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, filters, parsers, status, throttling
from rest_framework.response import Response

from console.views import not_found as console_not_found
from foundation.core.auth import TokenPrincipal, authenticate_header, metrics_only
from foundation.core.errors import OrchestratorError, error_body
from foundation.core.projects import scoped
from orchestrator.web import ratelimit

logger = logging.getLogger("orchestrator.api")


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, with input nested too deeply for Python's decoder as a 400."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError:
            raise exceptions.ParseError("JSON nested too deeply") from None


def error_response(exc: OrchestratorError) -> Response:
    return Response(exc.to_dict(), status=exc.http_status)


def exception_handler(exc, context):
    if isinstance(exc, OrchestratorError):
        return error_response(exc)
    if isinstance(exc, OperationalError | InterfaceError):
        # Postgres unreachable outside a tool call (e.g. while checking the token).
        logger.error("database unavailable: %s", exc)
        return Response(error_body("E1654", "PostgreSQL is unreachable"), status=503)
    if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
        body = error_body("E1609", str(exc.detail))
        return Response(body, status=status.HTTP_401_UNAUTHORIZED,
                        headers={"WWW-Authenticate": 'Bearer realm="orchestrator"'})
    if isinstance(exc, exceptions.Throttled):
        # TokenRateThrottle: the same 429 as the REST tool lane and MCP give.
        status_code, body, headers = ratelimit.refusal(math.ceil(exc.wait or 1))
        return Response(body, status=status_code, headers=headers)
    if isinstance(exc, RequestDataTooBig):
        # The fast lane answers the same for a body over the same limit.
        return Response(error_body("E1612", str(exc)), status=413)
    if isinstance(exc, exceptions.ParseError):
        return Response(error_body("E1612", f"Malformed JSON: {exc.detail}"), status=400)
    if isinstance(exc, exceptions.ValidationError):
        return Response(error_body("E1612", "Invalid input", exc.detail), status=400)
    if isinstance(exc, Http404 | exceptions.NotFound):
        return Response(error_body("E1610", "Not found"), status=404)
    if isinstance(exc, exceptions.APIException):
        return Response(error_body("E1612" if exc.status_code < 500 else "E1699", str(exc.detail)),
                        status=exc.status_code)
    logger.exception("unhandled API error")
    return Response(error_body("E1699", "Unexpected server fault"), status=500)


class BearerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        header = request.META.get("HTTP_AUTHORIZATION")
        if not header:
            return None
        principal = authenticate_header(header)
        if principal is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked bearer token")
        refused = metrics_only(principal)
        if refused is not None:
            raise refused
        return principal, None

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="orchestrator"'


class TokenRateThrottle(throttling.BaseThrottle):
    """Browsing counts against the token's one rate limit budget (orchestrator.web.ratelimit),
    shared with its REST tool calls and MCP. A console user browsing /api/docs/ with the
    admin's session is not a token and is not counted."""

    def allow_request(self, request, view) -> bool:
        user = request.user
        self.wait_seconds = ratelimit.retry_after(user.token_id) \
            if isinstance(user, TokenPrincipal) else None
        return self.wait_seconds is None

    def wait(self) -> float | None:
        return self.wait_seconds


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = BearerTokenAuthentication
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer",
                "description": "Create one with `manage.py create_api_token NAME`."}


class ProjectScopeFilter(filters.BaseFilterBackend):
    """Every browsing list and lookup sees only the caller's projects: a token made with
    --project gets another project's rows neither in lists nor by id (404, as if absent).
    ``?projectId=`` narrows any list to one project (one the token may reach). Applies to
    every model with a ``project_id``."""

    def filter_queryset(self, request, queryset, view):
        if not any(f.name == "project_id" for f in queryset.model._meta.concrete_fields):
            return queryset
        queryset = scoped(queryset, request.user)
        wanted = request.query_params.get("projectId")
        if wanted:
            queryset = queryset.filter(project_id=wanted)
        return queryset

    def get_schema_operation_parameters(self, view):
        return [{"name": "projectId", "required": False, "in": "query",
                 "description": "Only rows of this project", "schema": {"type": "string"}}]


def not_found(request, exception):
    """handler404: an address under /api/ no view matches (a task id out of the id pattern,
    a mistyped path) is the spec's 404 error object, as the API's own 404s; elsewhere the
    console's page."""
    if request.path.startswith("/api/"):
        return JsonResponse(error_body("E1610", "Not found"), status=404)
    return console_not_found(request, exception)
