"""Read-only browsing: /api/v1/sessions/ (limit/offset, filters), a session's events and
tool history (cursor pagination: append-only logs), /api/v1/handoffs/. Changes go through
the tools."""

from __future__ import annotations

import django_filters
from django.db.models import OuterRef, QuerySet, Subquery
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, viewsets
from rest_framework.decorators import action

from foundation.core.filters import StrictBooleanFilter
from foundation.core.pagination import StrictCursorPagination
from foundation.core.tools.schema import SAFE_ID_PATTERN, SESSION_STATUSES
from sessions.models import (
    ActiveSession,
    SessionDetail,
    SessionEvent,
    SessionHandoff,
    ToolInvocation,
)


class SessionSerializer(serializers.ModelSerializer):
    sessionId = serializers.CharField(source="session_id")
    taskId = serializers.CharField(source="task_id", allow_null=True)
    startedAt = serializers.DateTimeField(source="started_at")
    lastHeartbeat = serializers.DateTimeField(source="last_heartbeat")
    endedAt = serializers.DateTimeField(source="ended_at", allow_null=True)
    recoveryNeeded = serializers.BooleanField(source="recovery_needed")
    recoveryType = serializers.CharField(source="recovery_type", allow_null=True)
    conversationSummary = serializers.CharField(source="conversation_summary", allow_null=True)
    unsavedChanges = serializers.JSONField(source="unsaved_changes", allow_null=True)
    projectId = serializers.CharField(source="project_id")
    projectDir = serializers.CharField(source="project_dir", allow_null=True)
    gitBranch = serializers.CharField(source="git_branch", allow_null=True)
    contextSnapshot = serializers.JSONField(source="context_snapshot", allow_null=True)
    # Who runs the session (start_session's agentId / agentKind, kept in SessionDetail):
    # annotated by SessionViewSet.get_queryset, so a page costs no query per row.
    agentId = serializers.CharField(source="detail_agent_id", allow_null=True, read_only=True)
    agentKind = serializers.CharField(source="detail_agent_kind", allow_null=True,
                                      read_only=True)

    class Meta:
        model = ActiveSession
        fields = ["sessionId", "projectId", "taskId", "status", "startedAt", "lastHeartbeat",
                  "endedAt", "recoveryNeeded", "recoveryType", "conversationSummary",
                  "unsavedChanges", "projectDir", "gitBranch", "contextSnapshot", "agentId",
                  "agentKind"]


class EventSerializer(serializers.ModelSerializer):
    sessionId = serializers.CharField(source="session_id")
    type = serializers.CharField(source="event_type")
    createdAt = serializers.DateTimeField(source="created_at")

    class Meta:
        model = SessionEvent
        fields = ["sessionId", "sequence", "type", "role", "content", "parts", "createdAt"]


class ToolUseSerializer(serializers.ModelSerializer):
    errorCode = serializers.CharField(source="error_code", allow_null=True)
    durationMs = serializers.FloatField(source="duration_ms")

    class Meta:
        model = ToolInvocation
        fields = ["timestamp", "tool", "success", "errorCode", "transport", "durationMs",
                  "summary"]


class HandoffSerializer(serializers.ModelSerializer):
    handoffId = serializers.UUIDField(source="id")
    projectId = serializers.CharField(source="project_id")
    projectDir = serializers.CharField(source="project_dir", allow_null=True)
    fromSessionId = serializers.CharField(source="from_session_id")
    fromAgent = serializers.CharField(source="from_agent", allow_null=True)
    openItems = serializers.JSONField(source="open_items")
    createdAt = serializers.DateTimeField(source="created_at")
    consumedAt = serializers.DateTimeField(source="consumed_at", allow_null=True)
    consumedBySessionId = serializers.CharField(source="consumed_by_session_id",
                                                allow_null=True)
    lastConfirmedAt = serializers.DateTimeField(source="last_confirmed_at", allow_null=True)

    class Meta:
        model = SessionHandoff
        fields = ["handoffId", "projectId", "projectDir", "fromSessionId", "fromAgent",
                  "summary",
                  "openItems", "active", "createdAt", "consumedAt", "consumedBySessionId",
                  "lastConfirmedAt"]


class HandoffFilter(django_filters.FilterSet):
    active = StrictBooleanFilter()

    class Meta:
        model = SessionHandoff
        fields = ["active"]


class SequenceCursor(StrictCursorPagination):
    ordering = "sequence"


class NewestFirstCursor(StrictCursorPagination):
    ordering = "-id"


class SessionFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=[(s, s) for s in SESSION_STATUSES])
    task = django_filters.CharFilter(field_name="task_id")
    project = django_filters.CharFilter(field_name="project_dir")
    recoveryNeeded = StrictBooleanFilter(field_name="recovery_needed")

    class Meta:
        model = ActiveSession
        fields = ["status", "task", "project", "recoveryNeeded"]


class SessionViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = ActiveSession.objects.all()
    serializer_class = SessionSerializer
    lookup_field = "session_id"
    lookup_value_regex = SAFE_ID_PATTERN.strip("^$")
    filterset_class = SessionFilter
    ordering_fields = ["started_at", "last_heartbeat"]

    def get_queryset(self) -> QuerySet:
        detail = SessionDetail.objects.filter(session_id=OuterRef("session_id"))
        return super().get_queryset().annotate(
            detail_agent_id=Subquery(detail.values("agent_id")[:1]),
            detail_agent_kind=Subquery(detail.values("agent_kind")[:1]))

    # A detail action answering a page: drf-spectacular would document one object.
    @extend_schema(responses=EventSerializer(many=True))
    @action(detail=True, pagination_class=SequenceCursor, serializer_class=EventSerializer,
            filterset_class=None, ordering_fields=None)
    def events(self, request, session_id: str | None = None):
        self.get_object()
        return self._page(SessionEvent.objects.filter(session_id=session_id))

    @extend_schema(responses=ToolUseSerializer(many=True))
    @action(detail=True, url_path="tool-history", pagination_class=NewestFirstCursor,
            serializer_class=ToolUseSerializer, filterset_class=None, ordering_fields=None)
    def tool_history(self, request, session_id: str | None = None):
        self.get_object()
        return self._page(ToolInvocation.objects.filter(session_id=session_id))

    def _page(self, queryset: QuerySet):
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(self.get_serializer(page, many=True).data)


class HandoffViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = SessionHandoff.objects.all()
    serializer_class = HandoffSerializer
    filterset_class = HandoffFilter
    ordering_fields = ["created_at"]
