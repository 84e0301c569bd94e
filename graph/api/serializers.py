from rest_framework import serializers

from graph.models import TaskRelationship


class TaskRelationshipSerializer(serializers.ModelSerializer):
    sourceTaskId = serializers.CharField(source="source_task_id")  # noqa: N815
    targetTaskId = serializers.CharField(source="target_task_id")  # noqa: N815
    relationshipType = serializers.CharField(source="relationship_type")  # noqa: N815
    createdBy = serializers.CharField(source="created_by", allow_null=True)  # noqa: N815
    createdAt = serializers.DateTimeField(source="created_at")  # noqa: N815

    class Meta:
        model = TaskRelationship
        fields = ["id", "sourceTaskId", "targetTaskId", "relationshipType", "metadata",
                  "strength", "createdBy", "createdAt"]
        read_only_fields = fields
