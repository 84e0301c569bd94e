"""The agent catalogue: the few tools a model should call itself, as ``/mcp/agent`` (and
``manage.py mcp_stdio --agent-tools``) lists them.

``/mcp`` lists every registry tool, including the ones only the Claude Code hooks should
call (start_session, heartbeat, record_activity, end_session, ...): a model calling those
by mistake ends or muddles its own session, and their ~40 KB of definitions ride along in
every model request. This table offers eleven tools instead, under names that say what
they do, with a short description and a trimmed input schema each (8,112 bytes in all,
as Claude Code sends them; the budget is 8,192, tests/clients/test_agent_tools.py).

Each entry only renames a registry tool: a call goes through ``registry.call_tool`` under
the registry's name, with the caller's ToolContext, so validation, access rules, tracing,
metrics and the after-call hooks are the registry tool's own, and so is the answer.

A trimmed schema is cut from the registry tool's input schema (``Fields``): a subset of
its properties, with the same types and constraints and short or no descriptions, so it
stays in step with the registry and the registry's validation still decides. An argument
the trimmed schema leaves out but the registry tool takes is still accepted.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

from foundation.core.errors import OrchestratorError
from foundation.core.tools import registry

Schema = dict[str, Any]


@dataclass(frozen=True)
class Fields:
    """The properties of an object schema an agent tool keeps: name -> the description to
    give it ("" for none) or a nested ``Fields`` (an object property cut the same way)."""

    keep: dict[str, str | Fields]
    description: str = ""


@dataclass(frozen=True)
class AgentTool:
    name: str
    tool: str  # the registry tool it calls
    description: str
    fields: Fields = field(default_factory=lambda: Fields({}))


@dataclass(frozen=True)
class Listed:
    """An agent tool as tools/list gives it; ``output_schema`` is the registry tool's."""

    name: str
    description: str
    input_schema: Schema
    output_schema: Schema


SESSION = "Your orchestrator session id"
NOW = Fields({"workingOn": "", "lastAction": "", "nextStep": "", "blockers": "",
              "notes": ""}, "Replaces the whole object")

CATALOGUE: tuple[AgentTool, ...] = (
    AgentTool(
        "get_task_context", "get_unified_context",
        "Load a task's context: status, current work and next step, key files, decisions, "
        "related tasks, open conflicts, and the project's global context (alone without "
        "taskId).",
        Fields({"taskId": "",
                "depth": "hot: task and global context; warm: + relationships, conflicts; "
                         "cold: all (default)",
                "includeVersionHistory": ""})),
    AgentTool(
        "save_task_context", "save_context_snapshot",
        "Save progress on a task as a new version. Save after each meaningful step so "
        "another session can resume.",
        Fields({"taskId": "",
                "updates": Fields({"status": "", "currentPhase": "", "immediateContext": NOW,
                                   "keyFiles": "Replaces the list",
                                   "technicalDecisions": "Replaces the list"}),
                "changeSummary": "What changed, in one line",
                "sessionId": SESSION})),
    AgentTool(
        "create_task", "create_task",
        "Create a task in this project. taskId must be new: letters, digits, . _ : -",
        Fields({"taskId": "", "name": "", "description": "", "status": "", "priority": "",
                "keyFiles": ""})),
    AgentTool(
        "switch_task", "switch_task",
        "Make another task the active one; saves the current task's state first. Answers "
        "the new task's context. Refused while your session is paused.",
        Fields({"fromTaskId": "The task you leave", "toTaskId": "",
                "currentTaskUpdates": Fields({"immediateContext": NOW}),
                "sessionId": SESSION})),
    AgentTool(
        "create_checkpoint", "create_checkpoint",
        "Store a named snapshot of a task (without taskId: of the global context) to roll "
        "back to, e.g. before a risky change.",
        Fields({"label": "", "description": "", "taskId": ""})),
    AgentTool(
        "rollback_task", "rollback_to",
        "Restore a task to an earlier version or checkpoint. Makes a backup checkpoint "
        "first.",
        Fields({"taskId": "", "target": ""})),
    AgentTool(
        "list_checkpoints", "list_checkpoints",
        "Checkpoints of a task, newest first, to roll back to.",
        Fields({"taskId": ""})),
    AgentTool(
        "get_task_graph", "get_task_graph",
        "Task relationships: blockers, dependencies, subtasks, and which tasks are ready or "
        "blocked. With taskId: the tasks around it.",
        Fields({"taskId": "", "depth": "", "includeCompleted": ""})),
    AgentTool(
        "add_task_relationship", "add_task_relationship",
        "Relate two tasks, e.g. source blocks or depends_on target. Refused if it makes a "
        "cycle.",
        Fields({"sourceTaskId": "", "targetTaskId": "", "relationshipType": "",
                "reason": ""})),
    AgentTool(
        "check_conflicts", "detect_conflicts",
        "Find conflicts between this project's active tasks (shared key files, stale locks, "
        "diverging copies): new and still open ones.",
        Fields({"taskIds": "Only these tasks", "conflictTypes": ""})),
    AgentTool(
        "report_conflict", "report_conflict",
        "Record a conflict you found, e.g. two tasks contradicting each other: A's value in "
        "evidence.expectedValue, B's in actualValue.",
        Fields({"taskAId": "", "taskBId": "",
                "conflictType": "Default spec_contradiction", "severity": "",
                "description": "",
                "evidence": Fields({"field": "", "expectedValue": "", "actualValue": ""})})),
)

_BY_NAME = {entry.name: entry for entry in CATALOGUE}


def registry_name(name: str) -> str:
    """The registry tool behind the agent tool ``name``; E1615, as for any unknown tool,
    when the catalogue has no such name (a hook-only tool included)."""
    entry = _BY_NAME.get(name)
    if entry is None:
        raise OrchestratorError("E1615", f"No tool named {name!r}")
    return entry.tool


def call(name: str, arguments: Any, context: registry.ToolContext) -> dict[str, Any]:
    """Call the agent tool ``name``: the registry tool behind it, with these arguments."""
    return registry.call_tool(registry_name(name), arguments, context)


@functools.cache
def listed() -> tuple[Listed, ...]:
    """The catalogue as tools/list gives it (built once the apps registered their tools)."""
    result = []
    for entry in CATALOGUE:
        tool = registry.get_tool(entry.tool)
        result.append(Listed(entry.name, entry.description,
                             trim(tool.input_schema, entry.fields, top=True),
                             tool.output_schema))
    return tuple(result)


def trim(schema: Schema, fields: Fields, *, top: bool = False) -> Schema:
    """The object ``schema`` cut down to ``fields``; a property or requirement the registry
    no longer has, or a required one left out, is a programming error (KeyError,
    ValueError) caught by the tests."""
    properties: dict[str, Schema] = {}
    for name, keep in fields.keep.items():
        full = schema["properties"][name]
        if isinstance(keep, Fields):
            properties[name] = trim(full, keep)
        else:
            properties[name] = {**_bare(full), **({"description": keep} if keep else {})}
    required = list(schema.get("required") or ())
    left_out = [name for name in required if name not in properties]
    if left_out:
        raise ValueError(f"trimmed schema leaves out required {left_out}")
    trimmed: Schema = {"type": "object", "properties": properties,
                       # Strict at the top like the registry's; nested objects as there.
                       "additionalProperties": False if top
                       else schema.get("additionalProperties", False)}
    if required:
        trimmed["required"] = required
    if fields.description:
        trimmed["description"] = fields.description
    return trimmed


def _bare(schema: Schema) -> Schema:
    """``schema`` without descriptions, at every level (property names are kept)."""
    bare = {key: value for key, value in schema.items() if key != "description"}
    if isinstance(bare.get("properties"), dict):
        bare["properties"] = {name: _bare(sub) for name, sub in bare["properties"].items()}
    if isinstance(bare.get("items"), dict):
        bare["items"] = _bare(bare["items"])
    return bare
