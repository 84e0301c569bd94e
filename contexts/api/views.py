"""Read-only REST browsing of tasks, versions, checkpoints and the global context.

Writes go through the tools (/api/v1/tools/...); these views only list and show, in the
same camelCase shapes the tools answer with. A missing object is the spec's 404 (E1610 for
a task, E1622 for a checkpoint).
"""

from __future__ import annotations

import contextlib
import uuid

import django_filters
from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from contexts.models import Checkpoint, ContextVersion, TaskContext
from contexts.services import checkpoints, representation
from contexts.services.tasks import get_global_context
from foundation.core.errors import OrchestratorError, checkpoint_not_found, task_not_found
from foundation.core.filters import UtcDateTimeFilter, check_query_parameters
from foundation.core.projects import default_project, scoped
from foundation.core.stamps import iso
from foundation.core.tools.schema import CHANGE_TYPES, SAFE_ID_PATTERN

LOOKUP_REGEX = SAFE_ID_PATTERN.strip("^$")


# The serializers build camelCase answers by hand (the tools' shapes); their declared
# read-only fields exist so the OpenAPI document describes those answers.
class TaskSerializer(serializers.Serializer):
    taskId = serializers.CharField(read_only=True)
    name = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True, allow_null=True)
    agentType = serializers.CharField(read_only=True, allow_null=True)
    status = serializers.CharField(read_only=True)
    priority = serializers.IntegerField(read_only=True)
    currentPhase = serializers.CharField(read_only=True, allow_null=True)
    iteration = serializers.IntegerField(read_only=True)
    score = serializers.FloatField(read_only=True, allow_null=True)
    lockedElements = serializers.ListField(child=serializers.CharField(), read_only=True)
    immediateContext = serializers.DictField(read_only=True)
    keyFiles = serializers.ListField(child=serializers.CharField(), read_only=True)
    technicalDecisions = serializers.ListField(child=serializers.CharField(), read_only=True)
    resumePrompt = serializers.CharField(read_only=True, allow_null=True)
    keywords = serializers.ListField(child=serializers.CharField(), read_only=True)
    version = serializers.IntegerField(read_only=True)
    updatedAt = serializers.DateTimeField(read_only=True)
    lastSessionAt = serializers.DateTimeField(read_only=True, allow_null=True)
    createdAt = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: TaskContext) -> dict:
        return {**representation.task_part(instance), "projectId": instance.project_id,
                "createdAt": iso(instance.created_at)}


class VersionSerializer(serializers.Serializer):
    """A version in a list: without its snapshot (VersionDetailSerializer has it)."""

    id = serializers.UUIDField(read_only=True, help_text="Row id: /api/v1/versions/<id>/")
    taskId = serializers.CharField(read_only=True)
    version = serializers.IntegerField(read_only=True)
    createdAt = serializers.DateTimeField(read_only=True)
    changeType = serializers.CharField(read_only=True, allow_null=True)
    changeSummary = serializers.CharField(read_only=True, allow_null=True)
    createdBy = serializers.CharField(read_only=True, allow_null=True)
    sessionId = serializers.CharField(read_only=True, allow_null=True)

    def to_representation(self, instance: ContextVersion) -> dict:
        return {"id": str(instance.id), "taskId": instance.task_id, "version": instance.version,
                "createdAt": iso(instance.created_at),
                "changeType": instance.change_type, "changeSummary": instance.change_summary,
                "createdBy": instance.created_by, "sessionId": instance.session_id}


class VersionDetailSerializer(VersionSerializer):
    """A version with its snapshot: /api/v1/versions/<id>/ and a task's versions."""

    snapshot = serializers.DictField(read_only=True)

    def to_representation(self, instance: ContextVersion) -> dict:
        return {**super().to_representation(instance), "snapshot": instance.snapshot}


class CheckpointSerializer(serializers.Serializer):
    """A checkpoint in the list: without its snapshot (CheckpointDetailSerializer has it)."""

    checkpointId = serializers.CharField(read_only=True)
    projectId = serializers.CharField(read_only=True)
    label = serializers.CharField(read_only=True)
    description = serializers.CharField(read_only=True, allow_null=True)
    checkpointType = serializers.CharField(read_only=True)
    taskId = serializers.CharField(read_only=True, allow_null=True)
    scope = serializers.CharField(read_only=True)
    includedTasks = serializers.ListField(child=serializers.CharField(), read_only=True)
    createdBy = serializers.CharField(read_only=True, allow_null=True)
    sessionId = serializers.CharField(read_only=True, allow_null=True)
    createdAt = serializers.DateTimeField(read_only=True)

    def to_representation(self, instance: Checkpoint) -> dict:
        return {"checkpointId": instance.checkpoint_id, "projectId": instance.project_id,
                "label": instance.label,
                "description": instance.description, "checkpointType": instance.checkpoint_type,
                "taskId": instance.task_id, "scope": instance.scope,
                "includedTasks": list(instance.included_tasks or []),
                "createdBy": instance.created_by, "sessionId": instance.session_id,
                "createdAt": iso(instance.created_at)}


class CheckpointDetailSerializer(CheckpointSerializer):
    snapshot = serializers.DictField(read_only=True)

    def to_representation(self, instance: Checkpoint) -> dict:
        return {**super().to_representation(instance),
                "snapshot": checkpoints.snapshot_for_display(instance)}


class TaskFilter(django_filters.FilterSet):
    status = django_filters.CharFilter()
    agent_type = django_filters.CharFilter()
    keyword = django_filters.CharFilter(method="filter_keyword",
                                        help_text="In keywords, or in name/description")

    class Meta:
        model = TaskContext
        fields = ["status", "agent_type"]

    def filter_keyword(self, queryset, name, value):
        return queryset.filter(Q(keywords__contains=[value]) | Q(name__icontains=value)
                               | Q(description__icontains=value))


class TaskViewSet(viewsets.ReadOnlyModelViewSet):
    """Tasks: ?status=, ?agent_type=, ?keyword=, ?ordering=priority|-updated_at ..."""

    queryset = TaskContext.objects.all().order_by("-priority", "task_id")
    serializer_class = TaskSerializer
    filterset_class = TaskFilter
    ordering_fields = ["priority", "updated_at", "task_id"]
    lookup_field = "task_id"
    lookup_value_regex = LOOKUP_REGEX

    def get_object(self) -> TaskContext:
        task_id = self.kwargs["task_id"]
        task = scoped(TaskContext.objects, self.request.user).filter(task_id=task_id).first()
        if task is None:
            raise task_not_found(task_id)
        return task

    @extend_schema(responses=VersionDetailSerializer(many=True))
    @action(detail=True, methods=["get"], serializer_class=VersionDetailSerializer,
            filterset_class=None, ordering_fields=["version", "created_at"])
    def versions(self, request, task_id: str | None = None):
        """The task's versions, newest first (context_versions)."""
        task = self.get_object()
        queryset = self.filter_queryset(
            ContextVersion.objects.filter(task_id=task.task_id).order_by("-version"))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(VersionDetailSerializer(page, many=True).data)


class VersionFilter(django_filters.FilterSet):
    taskId = django_filters.CharFilter(field_name="task_id", help_text="Versions of one task")
    changeType = django_filters.ChoiceFilter(field_name="change_type",
                                             choices=[(c, c) for c in CHANGE_TYPES])
    sessionId = django_filters.CharFilter(field_name="session_id")
    createdAfter = UtcDateTimeFilter(field_name="created_at", lookup_expr="gte")
    createdBefore = UtcDateTimeFilter(field_name="created_at", lookup_expr="lt")

    class Meta:
        model = ContextVersion
        fields = ["taskId", "changeType", "sessionId", "createdAfter", "createdBefore"]


class VersionViewSet(viewsets.ReadOnlyModelViewSet):
    """Context versions of every task, newest first: ?taskId=, ?changeType=, ?sessionId=,
    ?createdAfter=, ?createdBefore=, ?ordering=. The list leaves the snapshot out; the
    detail (by the row's id) includes it."""

    queryset = ContextVersion.objects.all().order_by("-created_at", "task_id", "-version")
    serializer_class = VersionSerializer
    filterset_class = VersionFilter
    ordering_fields = ["created_at", "version", "task_id"]

    def get_object(self) -> ContextVersion:
        version_id = self.kwargs["pk"]
        version = None
        with contextlib.suppress(ValueError):
            version = scoped(ContextVersion.objects, self.request.user).filter(
                id=uuid.UUID(version_id)).first()
        if version is None:
            raise OrchestratorError("E1623", f"Version {version_id!r} does not exist",
                                    {"id": version_id})
        return version

    def get_serializer_class(self):
        return VersionSerializer if self.action == "list" else VersionDetailSerializer


class CheckpointViewSet(viewsets.ReadOnlyModelViewSet):
    """Checkpoints: ?task_id=, ?scope=, ?checkpoint_type=; the detail includes the snapshot."""

    queryset = Checkpoint.objects.all().order_by("-created_at", "-checkpoint_id")
    serializer_class = CheckpointSerializer
    filterset_fields = ["task_id", "scope", "checkpoint_type"]
    ordering_fields = ["created_at"]
    lookup_field = "checkpoint_id"
    lookup_value_regex = LOOKUP_REGEX

    def get_object(self) -> Checkpoint:
        checkpoint_id = self.kwargs["checkpoint_id"]
        checkpoint = scoped(Checkpoint.objects, self.request.user).filter(
            checkpoint_id=checkpoint_id).first()
        if checkpoint is None:
            raise checkpoint_not_found(checkpoint_id)
        return checkpoint

    def get_serializer_class(self):
        return CheckpointSerializer if self.action == "list" else CheckpointDetailSerializer


class GlobalContextViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """A project's global context (one object, not a list): ?projectId=, default the
    caller's project."""

    ERROR_STATUSES = (403, 404)  # a project the token cannot reach; an unknown project
    pagination_class = None
    filter_backends: list = []
    serializer_class = None

    @extend_schema(responses={200: OpenApiTypes.OBJECT},
                   parameters=[OpenApiParameter("projectId", str, required=False)])
    def list(self, request):
        check_query_parameters(request)
        allowed = getattr(request.user, "projects", None)
        project_id = request.query_params.get("projectId") or (
            next(iter(allowed)) if allowed is not None and len(allowed) == 1
            else default_project())
        if allowed is not None and project_id not in allowed:
            raise OrchestratorError("E1608", f"This token cannot reach project {project_id!r}",
                                    {"projectId": project_id, "projects": sorted(allowed)})
        project = get_global_context(project_id)
        return Response({
            "projectId": project.project_id, "projectName": project.project_name,
            "description": project.description, **representation.global_part(project),
            "activeTaskId": project.active_task_id,
            "orchestratorContext": project.orchestrator_context or {},
            "version": project.version, "updatedAt": iso(project.updated_at)})
