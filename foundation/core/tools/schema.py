"""Small builders for the JSON Schemas that declare tool inputs and outputs.

One schema per tool serves REST validation (jsonschema), the OpenAPI document
(drf-spectacular, OAS 3.1 accepts JSON Schema) and the MCP ``inputSchema``.
"""

from __future__ import annotations

from typing import Any

Schema = dict[str, Any]

# Task, checkpoint and session ids become Redis keys and file names: a strict character set.
SAFE_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$"
# A new task id is at most this long: it becomes task-agents/<id>.json, written through a
# temp file .<id>.json.<8 random>.tmp (id + 19 bytes), and a file name is at most 255
# bytes. Ids are ASCII, so characters are bytes. Existing ids keep the 255 of the column.
MAX_TASK_ID_LENGTH = 200


def _with(schema: Schema, description: str | None = None, **keywords: Any) -> Schema:
    """``schema`` with each keyword that was given (not None), then the description if any:
    every builder below leaves out what its caller did not ask for."""
    schema.update((key, value) for key, value in keywords.items() if value is not None)
    if description:
        schema["description"] = description
    return schema


def obj(properties: dict[str, Schema], required: list[str] | tuple[str, ...] = (),
        *, additional: bool | Schema = False, description: str | None = None) -> Schema:
    return _with({"type": "object", "properties": properties, "additionalProperties": additional},
                 description, required=list(required) if required else None)


def string(description: str | None = None, *, max_length: int | None = None,
           min_length: int | None = None, enum: list[str] | tuple[str, ...] | None = None,
           pattern: str | None = None, nullable: bool = False, fmt: str | None = None) -> Schema:
    return _with({"type": ["string", "null"] if nullable else "string"}, description,
                 enum=None if enum is None else list(enum) + ([None] if nullable else []),
                 maxLength=max_length, minLength=min_length, pattern=pattern or None,
                 format=fmt or None)


def safe_id(description: str, *, max_length: int = 255) -> Schema:
    return string(description, min_length=1, max_length=max_length, pattern=SAFE_ID_PATTERN)


def project_id(description: str = "Project id; omit for the caller's project (the token's "
               "only project, else the default project)") -> Schema:
    return safe_id(description, max_length=200)


# Integers end in Postgres integer columns (and counts and versions come from them): an
# unbounded one would pass validation and fail in the database as a server fault.
INT32_MAX = 2**31 - 1


def integer(description: str | None = None, *, minimum: int | None = None,
            maximum: int = INT32_MAX, default: int | None = None) -> Schema:
    return _with({"type": "integer", "maximum": maximum}, description, minimum=minimum,
                 default=default)


def number(description: str | None = None, *, minimum: float | None = None,
           maximum: float | None = None, nullable: bool = False) -> Schema:
    return _with({"type": ["number", "null"] if nullable else "number"}, description,
                 minimum=minimum, maximum=maximum)


def boolean(description: str | None = None, *, default: bool | None = None) -> Schema:
    return _with({"type": "boolean"}, description, default=default)


def array(items: Schema, description: str | None = None, *, max_items: int | None = None,
          unique: bool = False) -> Schema:
    return _with({"type": "array", "items": items}, description, maxItems=max_items,
                 uniqueItems=True if unique else None)


def string_list(description: str | None = None, *, max_items: int = 500,
                max_length: int = 2000) -> Schema:
    return array(string(max_length=max_length), description, max_items=max_items)


def any_value(description: str | None = None) -> Schema:
    return {"description": description} if description else {}


TASK_STATUSES = ("pending", "in_progress", "completed", "blocked", "archived")
CHANGE_TYPES = ("manual", "auto_save", "checkpoint", "recovery", "migration")
CHECKPOINT_TYPES = ("manual", "milestone", "pre_migration", "recovery_point", "auto")
CHECKPOINT_SCOPES = ("task", "global", "multi_task")
RELATIONSHIP_TYPES = ("blocks", "blocked_by", "depends_on", "dependency_of", "related_to",
                      "parent_of", "child_of")
CONFLICT_TYPES = ("state_mismatch", "file_conflict", "spec_contradiction", "version_divergence",
                  "lock_collision", "data_inconsistency")
SEVERITIES = ("low", "medium", "high", "critical")
RESOLUTION_STATUSES = ("unresolved", "investigating", "resolved", "ignored", "escalated")
SESSION_STATUSES = ("active", "ended", "crashed", "compacted", "recovered")
RECOVERY_TYPES = ("crash", "compaction", "timeout", "manual")

IMMEDIATE_CONTEXT = obj(
    {
        "workingOn": string(nullable=True, max_length=5000),
        "lastAction": string(nullable=True, max_length=5000),
        "nextStep": string(nullable=True, max_length=5000),
        "blockers": string_list(max_items=100),
        "notes": string(nullable=True, max_length=20000),
    },
    description="Where the agent stands: working on, last action, next step, blockers",
)

TIMESTAMP = string("ISO 8601 timestamp", fmt="date-time")
ERROR_OBJECT = obj(
    {
        "success": {"const": False},
        "error": obj({"code": string(), "message": string(), "details": any_value()},
                     ["code", "message"]),
        "timestamp": TIMESTAMP,
    },
    ["success", "error", "timestamp"],
    description="Error response: success false, an E16xx code, a message and details",
)


def answer_or_error(answer: Schema) -> Schema:
    """The outputSchema MCP advertises for a tool: its answer OR the spec's error object.

    A failed ``tools/call`` (``isError: true``) still carries the error object as
    ``structuredContent``, and clients such as the TypeScript SDK validate structured
    content on every result, errors included. MCP wants the root to be an object schema.
    """
    return {"type": "object", "anyOf": [answer, ERROR_OBJECT]}
