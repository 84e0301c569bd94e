"""Read-only browsing of live file claims: /api/v1/claims/ (who is editing what now).

One listing, not a paged list of rows: ``claims.services.queries.file_claims`` with contested
paths first, the contested paths and the total. The caller sees the projects its token
may reach, as in every browsing list (``foundation.core.projects.scoped``);
``?project=`` (or ``?projectId=``, the other lists' name) narrows it to one of them.
Changes go through the tools (claim_files, release_files).
"""

from __future__ import annotations

import re

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from claims.services.claimants import MAX_PATH_LENGTH, MAX_PATHS
from claims.services.queries import file_claims, listing
from contexts.models import TaskContext
from foundation.core.errors import task_not_found
from foundation.core.filters import check_query_parameters
from foundation.core.projects import check_project_id, scoped
from foundation.core.tools.schema import SAFE_ID_PATTERN

SAFE_ID = re.compile(SAFE_ID_PATTERN)


class ClaimSerializer(serializers.Serializer):
    """A claim as ``claims.services.holders.Holder.as_dict`` gives it (declared for OpenAPI)."""

    projectId = serializers.CharField()
    path = serializers.CharField(help_text="Relative to the repository's root")
    sessionId = serializers.CharField()
    taskId = serializers.CharField(allow_null=True)
    taskName = serializers.CharField(allow_null=True)
    taskStatus = serializers.CharField(allow_null=True)
    agentId = serializers.CharField(allow_null=True)
    doing = serializers.CharField(allow_null=True, help_text="The task's workingOn or phase")
    state = serializers.ChoiceField(choices=["held", "recent"],
                                    help_text="recent: expired lately, its session is live")
    claimedAt = serializers.DateTimeField()
    lastEditAt = serializers.DateTimeField()
    expiresAt = serializers.DateTimeField()
    secondsSinceEdit = serializers.FloatField()
    contested = serializers.BooleanField(help_text="More than one task holds this file "
                                                   "(this path of this project)")


class ClaimListingSerializer(serializers.Serializer):
    success = serializers.BooleanField()
    claims = ClaimSerializer(many=True, help_text="Contested paths first, then by path")
    contested = serializers.ListField(child=serializers.CharField(),
                                      help_text="Paths held by more than one task now")
    total = serializers.IntegerField()
    timestamp = serializers.DateTimeField()


class ClaimQuerySerializer(serializers.Serializer):
    """The query parameters; an empty value is as if absent (like the lists' filters)."""

    project = serializers.CharField(required=False, allow_blank=True)
    projectId = serializers.CharField(required=False, allow_blank=True)
    task = serializers.CharField(required=False, allow_blank=True)
    session = serializers.CharField(required=False, allow_blank=True)
    path = serializers.ListField(child=serializers.CharField(allow_blank=True,
                                                             trim_whitespace=False),
                                 required=False)
    includeRecent = serializers.BooleanField(required=False, default=True)

    def validate_project(self, value: str) -> str:
        return check_project_id(value, field="project") if value else value

    def validate_projectId(self, value: str) -> str:  # noqa: N802
        return check_project_id(value, field="projectId") if value else value

    def validate_path(self, values: list[str]) -> list[str]:
        paths = [p for value in values for p in value.split(",") if p.strip()]
        if len(paths) > MAX_PATHS:
            raise serializers.ValidationError(f"at most {MAX_PATHS} paths")
        if any(len(p) > MAX_PATH_LENGTH for p in paths):
            raise serializers.ValidationError(f"a path is at most {MAX_PATH_LENGTH} characters")
        return paths


def visible_projects(request: Request, wanted: str | None) -> list[str] | None:
    """The projects the listing covers: the token's (None: every project), narrowed to
    ``wanted``; a project the token cannot reach lists nothing, as in the other lists."""
    allowed = getattr(request.user, "projects", None)
    if wanted:
        return [wanted] if allowed is None or wanted in allowed else []
    return None if allowed is None else sorted(allowed)


@extend_schema(
    summary="Live file claims: who is editing which file now",
    description="Claims of live sessions (held, and with includeRecent those that expired "
                "lately), contested paths (more than one task holds them) first. "
                "An unknown task (or one of a project the token cannot reach) is 404 E1610.",
    parameters=[
        OpenApiParameter("project", str, required=False,
                         description="Only this project's claims (one the token may reach)"),
        OpenApiParameter("projectId", str, required=False, description="Same as project"),
        OpenApiParameter("task", str, required=False,
                         description="This task's claims and the other tasks' claims on "
                                     "its paths (who it contends with)"),
        OpenApiParameter("session", str, required=False,
                         description="Only this session's claims"),
        OpenApiParameter("path", str, many=True, explode=True, required=False,
                         description="Only these paths (repeat it, or a comma list)"),
        OpenApiParameter("includeRecent", OpenApiTypes.BOOL, required=False, default=True,
                         description="Also claims that expired lately (state recent)"),
    ],
    responses={200: ClaimListingSerializer},
)
class ClaimListView(APIView):
    """GET /api/v1/claims/: the listing of ``claims.services.queries.file_claims`` (one object,
    not a page of rows: an APIView, so the OpenAPI document describes it as one)."""

    ERROR_STATUSES = (404,)  # an unknown ?task= (or one of a project the token cannot reach)

    def get(self, request: Request) -> Response:
        check_query_parameters(request)
        query = ClaimQuerySerializer(data={
            **{key: request.query_params.get(key) for key in
               ("project", "projectId", "task", "session", "includeRecent")
               if key in request.query_params},
            **({"path": request.query_params.getlist("path")}
               if "path" in request.query_params else {})})
        query.is_valid(raise_exception=True)
        params = query.validated_data
        project_ids = visible_projects(request, params.get("project") or
                                       params.get("projectId"))
        task_id = params.get("task") or None
        if task_id is not None and (
                not SAFE_ID.match(task_id)
                or not scoped(TaskContext.objects, request.user).filter(
                    task_id=task_id).exists()):
            # Another project's task answers exactly as a missing one.
            raise task_not_found(task_id)
        session_id = params.get("session") or None
        if session_id is not None and not SAFE_ID.match(session_id):
            return Response(listing([]))  # no session has such an id
        return Response(file_claims(project_ids, paths=params.get("path") or None,
                                    task_id=task_id, session_id=session_id,
                                    include_recent=params["includeRecent"]))
