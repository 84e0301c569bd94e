"""Conflict tools: detect_conflicts, resolve_conflict, update_conflict_status,
report_conflict (the task lock tools are locks.tools)."""

from __future__ import annotations

from typing import Any

from conflicts.services import detection, reporting, resolution
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import (
    CONFLICT_TYPES,
    RESOLUTION_STATUSES,
    SEVERITIES,
    TIMESTAMP,
    any_value,
    array,
    boolean,
    integer,
    number,
    obj,
    project_id,
    safe_id,
    string,
)
from locks.services import LOCK_RULE

EVIDENCE = obj({"field": string(max_length=255), "expectedValue": any_value(),
                "actualValue": any_value(), "location": string(max_length=2000)},
               additional=True)
TASK_IDS = array(string(max_length=255), "Restrict to these tasks; omit for all active tasks "
                 "(status pending, in_progress or blocked)", max_items=10000)
CONFLICT_ID = string("Conflict id (UUID)", max_length=100)


def _detect(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return detection.detect_conflicts(args.get("taskIds"), args.get("conflictTypes"),
                                      project_ids=ctx.visible_projects(args.get("projectId")),
                                      progress=ctx.progress)


register(Tool(
    name="detect_conflicts",
    description=(
        "Cross-system conflict detection, within each of the caller's projects "
        "(projectId: only that one; tasks of two projects never pair). file_conflict: "
        "active tasks sharing key files (high if 3+ files, else medium; strength "
        "min(n/5, 1)). lock_collision: "
        "task locks in Redis whose expiresAt is past (high, 1.0). state_mismatch: the Redis "
        "task cache differs from Postgres (medium, 0.8). version_divergence: more than one "
        "recovery version (low, 0.5). data_inconsistency: the task file backup differs from "
        "Postgres (medium, 0.7). New conflicts are stored and listed in 'detected'; conflicts "
        "already stored and still open are listed in 'existing' and never stored twice. "
        "Open conflicts a method re-checked whose evidence no longer holds (a file_conflict's "
        "tasks share none of its paths or one is no longer active, the expired lock is gone, "
        "the cache or file agrees again) are resolved as 'auto: evidence gone' and listed in "
        "'closed'; a new file_conflict closes the pair's older ones whose paths it all lists "
        "('auto: superseded by <id>'). Reported conflicts (agent, manual) are never closed. "
        "Unknown conflict type: E1641; failed query: E1640."
    ),
    input_schema=obj({
        "taskIds": TASK_IDS,
        "projectId": project_id("Only this project"),
        "conflictTypes": array(string(enum=CONFLICT_TYPES), "Types to detect; omit for all"),
    }),
    output_schema=obj({
        "detected": array(obj({
            "id": string(), "taskAId": string(), "taskBId": string(),
            "conflictType": string(enum=CONFLICT_TYPES), "severity": string(enum=SEVERITIES),
            "strength": number(minimum=0, maximum=1), "description": string(),
            "evidence": EVIDENCE, "suggestedResolution": string()},
            ["taskAId", "conflictType", "severity", "strength", "description", "evidence"])),
        "existing": array(obj({
            "id": string(), "taskAId": string(), "taskBId": string(),
            "conflictType": string(enum=CONFLICT_TYPES), "severity": string(enum=SEVERITIES),
            "description": string(), "detectedAt": TIMESTAMP,
            "resolutionStatus": string(enum=RESOLUTION_STATUSES)},
            ["id", "taskAId", "conflictType", "severity", "description", "detectedAt"])),
        "summary": obj({"newConflicts": integer(), "existingConflicts": integer(),
                        "criticalCount": integer(), "highCount": integer()},
                       ["newConflicts", "existingConflicts", "criticalCount", "highCount"]),
        "timestamp": TIMESTAMP,
        "skipped": array(obj({"conflictType": string(), "reason": string()}),
                         "Methods not run because their backend was unreachable"),
        "closed": array(obj({
            "id": string(), "conflictType": string(enum=CONFLICT_TYPES),
            "severity": string(enum=SEVERITIES), "taskAId": string(), "taskBId": string(),
            "resolvedBy": string(), "notes": string()},
            ["id", "conflictType", "taskAId", "resolvedBy"]),
            "Open conflicts this run resolved automatically (evidence gone, or superseded)"),
    }, ["detected", "existing", "summary", "timestamp"]),
    handler=_detect,
    validation_code="E1641",
    only_known=frozenset({"taskIds"}),
))


RESOLUTION = obj({
    "action": string("use_a | use_b | merge | custom | ignore",
                     enum=("use_a", "use_b", "merge", "custom", "ignore")),
    "resolvedValue": any_value("For merge/custom: {taskId: {camelCase task changes}} for the "
                               "conflict's task(s)"),
    "notes": string(max_length=5000),
}, ["action"], description="What to do about the conflict")


def _resolve(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return resolution.resolve_conflict(
        args["conflictId"], args["resolution"], resolved_by=args.get("resolvedBy") or ctx.actor
        or None, session_id=args.get("sessionId"))


register(Tool(
    name="resolve_conflict",
    description=(
        "Apply a resolution to a conflict; it becomes resolved (ignored for "
        "'ignore'). Side effects: file_conflict use_a/use_b removes the shared files from the "
        "other task's keyFiles; state_mismatch use_a resyncs the Redis cache from Postgres, "
        "use_b writes the cached values to Postgres; data_inconsistency use_a rewrites the "
        "file backup, use_b writes the file's values to Postgres; lock_collision releases the "
        "abandoned lock; merge/custom apply resolvedValue = {taskId: {changes}}. Task changes "
        "are versioned saves naming the conflict and obey the task lock rule (pass sessionId "
        "if you hold the lock). E1642 unknown id, E1643 already resolved or ignored (also to "
        "the loser of two simultaneous resolutions), E1644 a side effect failed (nothing "
        "changed). " + LOCK_RULE
    ),
    input_schema=obj({
        "conflictId": CONFLICT_ID,
        "resolution": RESOLUTION,
        "resolvedBy": string("Resolver identifier", max_length=255),
        "sessionId": safe_id("Session making the task changes (needed for locked tasks)"),
    }, ["conflictId", "resolution"]),
    output_schema=obj({
        "success": boolean(), "conflictId": string(),
        "previousStatus": string(enum=RESOLUTION_STATUSES),
        "newStatus": string(enum=RESOLUTION_STATUSES),
        "resolution": obj({"action": string(), "notes": string()}, ["action"]),
        "effects": array(string(), "What the resolution changed"),
        "resolvedBy": string(nullable=True),
        "timestamp": TIMESTAMP,
    }, ["success", "conflictId", "previousStatus", "newStatus", "resolution", "timestamp"]),
    handler=_resolve,
))


def _update_status(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return resolution.set_status(args["conflictId"], args["status"],
                                 by=args.get("by") or ctx.actor or None, notes=args.get("notes"))


register(Tool(
    name="update_conflict_status",
    description=(
        "Take a conflict to 'investigating' (from unresolved or escalated) or 'escalated' "
        "(from unresolved or investigating) without resolving it. E1642 unknown id, E1643 "
        "when the conflict is already resolved, ignored or in that status."
    ),
    input_schema=obj({
        "conflictId": CONFLICT_ID,
        "status": string(enum=("investigating", "escalated")),
        "by": string("Who takes the step", max_length=255),
        "notes": string(max_length=5000),
    }, ["conflictId", "status"]),
    output_schema=obj({"success": boolean(), "conflictId": string(),
                       "previousStatus": string(enum=RESOLUTION_STATUSES),
                       "newStatus": string(enum=RESOLUTION_STATUSES), "timestamp": TIMESTAMP},
                      ["success", "conflictId", "previousStatus", "newStatus", "timestamp"]),
    handler=_update_status,
))


def _report(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return reporting.report_conflict(
        task_a_id=args["taskAId"], task_b_id=args.get("taskBId"),
        conflict_type=args.get("conflictType", "spec_contradiction"),
        severity=args.get("severity", "medium"), strength=args.get("strength", 1.0),
        description=args["description"], evidence=args.get("evidence"),
        detection_method=args.get("detectionMethod"),
        detected_by=args.get("detectedBy", "agent"))


register(Tool(
    name="report_conflict",
    description=(
        "Record a conflict seen by an agent or a person (detectedBy 'agent' or 'manual'), "
        "typically a spec_contradiction between two tasks. Put task A's value in "
        "evidence.expectedValue and task B's in evidence.actualValue; when evidence.field is a "
        "task field (e.g. currentPhase), resolving with use_a / use_b copies that value to the "
        "other task. conflictType is one of " + ", ".join(CONFLICT_TYPES) + " (E1641 "
        "otherwise). The same open conflict (tasks, type, evidence) is stored once: reporting "
        "it again answers created: false with the stored record. Unknown task: E1610."
    ),
    input_schema=obj({
        "taskAId": safe_id("First task"),
        "taskBId": safe_id("Second task, if the conflict is between two"),
        "conflictType": string("Default spec_contradiction", max_length=50),
        "severity": string(enum=SEVERITIES),
        "strength": number("0.0-1.0 confidence", minimum=0, maximum=1),
        "description": string(min_length=1, max_length=10000),
        "evidence": EVIDENCE,
        "detectedBy": string(enum=("agent", "manual")),
        "detectionMethod": string(max_length=255),
    }, ["taskAId", "description"]),
    output_schema=obj({"success": boolean(), "created": boolean(),
                       "conflict": {"type": ["object", "null"]}},
                      ["success", "created", "conflict"]),
    handler=_report,
))


# -- what a project-limited token may name (foundation.core.tools.access) ----------------
# Conflicts live in a project; these tools' arguments also name tasks.
def _register_project_entities() -> None:
    import re

    from foundation.core.db import qualified
    from foundation.core.errors import conflict_not_found, task_not_found
    from foundation.core.tools.access import register_argument, register_entity

    # Conflict ids are UUIDs: any other id names no conflict, and is not looked up.
    register_entity("conflict", f"SELECT id::text, project_id FROM "
                    f"{qualified('context_conflicts')} WHERE id = ANY(%s::uuid[])",
                    id_pattern=re.compile(r"^[0-9a-fA-F-]{32,36}$"))
    for name in ("taskIds", "taskAId", "taskBId"):
        register_argument(name, "task", task_not_found)
    register_argument("conflictId", "conflict", conflict_not_found)


_register_project_entities()
