"""Read-only browsing of task_relationships; writes go through the relationship tools."""

from __future__ import annotations

import django_filters
from django.db.models import Q
from rest_framework import viewsets

from foundation.core.tools.schema import RELATIONSHIP_TYPES
from graph.api.serializers import TaskRelationshipSerializer
from graph.models import TaskRelationship


class TaskRelationshipFilter(django_filters.FilterSet):
    source = django_filters.CharFilter(field_name="source_task_id")
    target = django_filters.CharFilter(field_name="target_task_id")
    type = django_filters.ChoiceFilter(field_name="relationship_type",
                                       choices=[(t, t) for t in RELATIONSHIP_TYPES])
    task = django_filters.CharFilter(method="touching", label="Either end is this task")

    def touching(self, queryset, name, value):
        return queryset.filter(Q(source_task_id=value) | Q(target_task_id=value))

    class Meta:
        model = TaskRelationship
        fields = ["source", "target", "type", "task"]


class TaskRelationshipViewSet(viewsets.ReadOnlyModelViewSet):
    queryset = TaskRelationship.objects.all()
    serializer_class = TaskRelationshipSerializer
    filterset_class = TaskRelationshipFilter
    ordering_fields = ["created_at", "source_task_id", "target_task_id"]
    ordering = ["source_task_id", "target_task_id", "relationship_type"]
