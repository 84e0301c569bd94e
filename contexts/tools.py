"""Context tools (spec 4.1.1-4.1.5, 4.1.10) and create_task (CONTRACT.md)."""

from __future__ import annotations

from typing import Any

from contexts.services import representation, tasks
from orchestrator.errors import now_iso
from orchestrator.tools import Tool, ToolContext, register
from orchestrator.tools.schema import (
    IMMEDIATE_CONTEXT,
    TASK_STATUSES,
    TIMESTAMP,
    boolean,
    integer,
    number,
    obj,
    safe_id,
    string,
    string_list,
)

SAVED_TO = obj({"database": boolean(), "redis": boolean(), "file": boolean()},
               ["database", "redis", "file"])

TASK_FIELDS = {
    "name": string("Display name", min_length=1, max_length=500),
    "description": string(max_length=20000, nullable=True),
    "agentType": string(max_length=100, nullable=True),
    "status": string(enum=TASK_STATUSES),
    "priority": integer(minimum=0, maximum=1000),
    "currentPhase": string(max_length=255, nullable=True),
    "iteration": integer(minimum=0),
    "score": number("0-100, two decimals", minimum=0, maximum=100, nullable=True),
    "keyFiles": string_list("File paths this task touches", max_length=1000),
    "technicalDecisions": string_list(max_length=5000),
    "keywords": string_list(max_items=100, max_length=100),
    "immediateContext": IMMEDIATE_CONTEXT,
    "lockedElements": string_list("Field names (e.g. keyFiles) or file paths only the lock "
                                  "holder may change", max_items=100, max_length=1000),
    "resumePrompt": string(max_length=20000, nullable=True),
}


def _create_task(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return tasks.create_task(args, created_by=ctx.actor or None)


register(Tool(
    name="create_task",
    description=(
        "Create a task context. The database records it as version 1. "
        "An existing taskId is refused with E1614 (409)."
    ),
    input_schema=obj({"taskId": safe_id("Unique task id (letters, digits, . _ : -)"),
                      **TASK_FIELDS}, ["taskId", "name"]),
    output_schema=obj({"success": boolean(), "taskId": string(), "version": integer(),
                       "createdAt": TIMESTAMP, "savedTo": SAVED_TO},
                      ["success", "taskId", "version", "createdAt"]),
    handler=_create_task,
))


def _get_unified_context(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    project = tasks.get_global_context()
    return {
        "projectId": project.project_id,
        "global": representation.global_part(project),
        "metadata": {"source": "database", "loadedAt": now_iso(), "cacheHit": False},
    }


register(Tool(
    name="get_unified_context",
    description="Aggregate the global context and, with taskId, one task's context (spec 4.1.1).",
    input_schema=obj({
        "taskId": safe_id("Task to load; omit for the global context only"),
        "includeRelationships": boolean(default=True),
        "includeVersionHistory": boolean(default=False),
        "maxVersions": integer(minimum=1),
    }),
    output_schema=obj({
        "projectId": string(),
        "global": obj({"hardRules": string_list(), "techStack": string_list(),
                       "keyPaths": {"type": "object"}, "services": {"type": "object"}}),
        "task": {"type": "object"},
        "relationships": {"type": "object"},
        "versionHistory": {"type": "array"},
        "conflicts": {"type": "array"},
        "metadata": obj({"source": string(enum=("database", "cache", "hybrid")),
                         "loadedAt": TIMESTAMP, "cacheHit": boolean()}, additional=True),
    }, ["projectId", "global", "metadata"], additional=True),
    handler=_get_unified_context,
    read_only=True,
))
