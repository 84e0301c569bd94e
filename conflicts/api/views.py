"""Read-only browsing of context_conflicts: /api/v1/conflicts/ (filters type, severity,
status, task); changes go through the tools (resolve_conflict, update_conflict_status)."""

from __future__ import annotations

import django_filters
from django.db.models import Q
from rest_framework import serializers, viewsets

from conflicts.models import ContextConflict
from conflicts.services import representation
from conflicts.services.resolution import parse_conflict_id
from foundation.core.errors import conflict_not_found
from foundation.core.projects import scoped
from foundation.core.tools.schema import CONFLICT_TYPES, RESOLUTION_STATUSES, SEVERITIES


class ConflictSerializer(serializers.Serializer):
    """The camelCase record of representation.conflict_dict (fields declared for OpenAPI)."""

    id = serializers.UUIDField()
    taskAId = serializers.CharField(source="task_a_id")
    taskBId = serializers.CharField(source="task_b_id", allow_null=True)
    conflictType = serializers.ChoiceField(source="conflict_type", choices=CONFLICT_TYPES)
    description = serializers.CharField()
    severity = serializers.ChoiceField(choices=SEVERITIES)
    strength = serializers.FloatField(allow_null=True)
    evidence = serializers.JSONField(allow_null=True)
    resolutionStatus = serializers.ChoiceField(source="resolution_status",
                                               choices=RESOLUTION_STATUSES)
    resolution = serializers.JSONField(allow_null=True)
    resolvedBy = serializers.CharField(source="resolved_by", allow_null=True)
    detectedAt = serializers.DateTimeField(source="detected_at")
    resolvedAt = serializers.DateTimeField(source="resolved_at", allow_null=True)
    detectedBy = serializers.CharField(source="detected_by", allow_null=True)
    detectionMethod = serializers.CharField(source="detection_method", allow_null=True)

    def to_representation(self, instance: ContextConflict) -> dict:
        return representation.conflict_dict(instance)


class ConflictFilter(django_filters.FilterSet):
    type = django_filters.ChoiceFilter(field_name="conflict_type",
                                       choices=[(t, t) for t in CONFLICT_TYPES])
    severity = django_filters.ChoiceFilter(choices=[(s, s) for s in SEVERITIES])
    status = django_filters.ChoiceFilter(field_name="resolution_status",
                                         choices=[(s, s) for s in RESOLUTION_STATUSES])
    task = django_filters.CharFilter(method="filter_task", label="Task A or task B")

    class Meta:
        model = ContextConflict
        fields = ["type", "severity", "status", "task"]

    def filter_task(self, queryset, name, value):
        return queryset.filter(Q(task_a_id=value) | Q(task_b_id=value))


class ConflictViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = ContextConflict.objects.all()
    serializer_class = ConflictSerializer
    filterset_class = ConflictFilter
    ordering_fields = ["detected_at", "resolved_at", "severity"]
    ordering = ["-detected_at"]

    def get_object(self) -> ContextConflict:
        pk = parse_conflict_id(self.kwargs["pk"])
        conflict = scoped(ContextConflict.objects, self.request.user).filter(pk=pk).first()
        if conflict is None:
            raise conflict_not_found(pk)
        return conflict
