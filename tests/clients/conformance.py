"""The tool-call scenario shared by the conformance tests (REST, the Python SDK client, the
TypeScript SDK 1.x and the TypeScript client v2; revisions.py adds the protocol revisions).

``tool_calls.json`` lists calls of every tool with valid and invalid input and the outcome
each must have ("ok" or a spec error code). Each transport runs it and hands back what it
got; ``problems`` says where an answer broke its expectation or its tool's schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema

from foundation.core.tools import registry
from foundation.core.tools.schema import ERROR_OBJECT, answer_or_error

SCENARIO_FILE = Path(__file__).with_name("tool_calls.json")
REFERENCE = re.compile(r"^\$\{(\w+)\.([\w.]+)\}$")
# Every tool's input schema refuses unknown fields, so this is invalid input for all of
# them, including tools added after this file was written.
UNKNOWN_FIELD_ARGUMENTS = {"unexpectedField": True}
CRASHED_SESSION = "conf-crashed"


@dataclass
class Outcome:
    tool: str
    arguments: dict[str, Any]
    expect: str  # "ok" or an E16xx code
    is_error: bool
    body: Any
    status: int | None = None  # HTTP status (REST only)
    client_error: str | None = None  # what the SDK client raised, if anything
    label: str | None = field(default=None, repr=False)


def steps() -> list[dict[str, Any]]:
    return json.loads(SCENARIO_FILE.read_text())["steps"]


def resolve(value: Any, answers: dict[str, Any]) -> Any:
    """Replace "${label.path}" strings with the value at path in that step's answer."""
    if isinstance(value, dict):
        return {k: resolve(v, answers) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, answers) for v in value]
    match = REFERENCE.match(value) if isinstance(value, str) else None
    if not match:
        return value
    found = answers[match.group(1)]
    for key in match.group(2).split("."):
        found = found[key]
    return found


Call = Callable[[str, dict[str, Any]], Outcome]


def run_scenario(call: Call) -> list[Outcome]:
    """Every step of the scenario, then every registered tool with an unknown field."""
    answers: dict[str, Any] = {}
    outcomes = []
    for step in steps():
        outcome = call(step["tool"], resolve(step["arguments"], answers))
        outcome.expect, outcome.label = step["expect"], step.get("as")
        if outcome.label:
            answers[outcome.label] = outcome.body
        outcomes.append(outcome)
    for tool in registry.tools():
        outcome = call(tool.name, dict(UNKNOWN_FIELD_ARGUMENTS))
        outcome.expect = tool.validation_code
        outcomes.append(outcome)
    return outcomes


# RFC 3339 date-time, as the TypeScript SDK's Ajv (ajv-formats) checks it. jsonschema's
# own date-time check needs an optional package; installing it only for the tests would
# also change what the registry's input validation accepts there but not in production.
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.I)
FORMATS = jsonschema.FormatChecker()


@FORMATS.checks("date-time", raises=ValueError)
def is_rfc3339(value: object) -> bool:
    if not isinstance(value, str):
        return True
    if not RFC3339.match(value):
        return False
    datetime.fromisoformat(value.upper().replace("Z", "+00:00"))  # real date and time
    return True


def schema_problems(schema: dict[str, Any], instance: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator(schema, format_checker=FORMATS)
    return [f"{'/'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}"
            for e in validator.iter_errors(instance)]


def problems(outcome: Outcome, advertised: dict[str, Any] | None = None, *,
             expectations: bool = True) -> list[str]:
    """What is wrong with one outcome: expectation, client complaint, schema conformance.

    ``advertised`` is the outputSchema a client received from tools/list; the answer is
    also checked against the precise half (the tool's answer schema, or the error object)
    so a failure names the field at fault. Without ``expectations`` (backends down, where
    locks and syncs fail by design) any outcome but a server fault (E1699) will do.
    """
    found = []
    tool = registry.get_tool(outcome.tool)
    body = outcome.body
    code = body.get("error", {}).get("code") if isinstance(body, dict) else None
    if outcome.client_error:
        return [f"{outcome.tool} {json.dumps(outcome.arguments)[:200]}: client raised: "
                f"{outcome.client_error}"]
    if code == "E1699":
        found.append(f"server fault: {body}")
    elif not expectations:
        pass
    elif outcome.expect == "ok" and outcome.is_error:
        found.append(f"expected success, got {code}: {body}")
    elif outcome.expect != "ok" and (not outcome.is_error or code != outcome.expect):
        got = f"error {code}" if outcome.is_error else "success"
        found.append(f"expected {outcome.expect}, got {got}")
    precise = ERROR_OBJECT if outcome.is_error else tool.output_schema
    schema_found = [f"schema: {p}" for p in schema_problems(precise, body)]
    for schema in (answer_or_error(tool.output_schema), advertised):
        if not schema_found and schema is not None and schema_problems(schema, body):
            schema_found.append("does not conform to the advertised outputSchema")
    found += schema_found
    return [f"{outcome.tool} {json.dumps(outcome.arguments)[:200]}: {p}" for p in found]


def all_problems(outcomes: list[Outcome], advertised: dict[str, dict[str, Any]] | None = None,
                 *, expectations: bool = True) -> list[str]:
    advertised = advertised or {}
    return [p for o in outcomes
            for p in problems(o, advertised.get(o.tool), expectations=expectations)]


# Answer parts the scenario must reach, so that it keeps checking the optional shapes
# (a scenario drifting to bare answers would conform trivially): (tool, path).
REACHED_PARTS = [
    ("start_session", "handoff.summary"), ("start_session", "contextBundle.text"),
    ("start_session", "taskSource"), ("start_session", "recovery.orphanedTasks.0.taskId"),
    ("check_recovery", "sessions.0.resumePrompt"), ("check_recovery", "markedRecovered"),
    ("check_recovery", "sessions.0.toolHistory"), ("report_compaction", "contextBundle"),
    ("get_task_graph", "focus.task"), ("get_task_graph", "metadata.depth"),
    ("get_unified_context", "task"), ("detect_conflicts", "detected.0"),
    ("record_activity", "keyFilesAdded.0"), ("rollback_to", "backupCheckpointId"),
    ("list_checkpoints", "checkpoints.0.size"), ("list_checkpoints", "latest.checkpointId"),
]


def unreached_parts(outcomes: list[Outcome]) -> list[tuple[str, str]]:
    def reaches(body: Any, path: str) -> bool:
        for key in path.split("."):
            if isinstance(body, list) and key.isdigit() and int(key) < len(body):
                body = body[int(key)]
            elif isinstance(body, dict) and key in body:
                body = body[key]
            else:
                return False
        return True

    return [(tool, path) for tool, path in REACHED_PARTS
            if not any(o.tool == tool and not o.is_error and reaches(o.body, path)
                       for o in outcomes)]


def seed_crashed_session() -> None:
    """A crashed session with a task and unsaved work, so check_recovery has one to report."""
    from sessions.services import recovery

    context = registry.ToolContext("command", "conformance-seed")
    registry.call_tool("create_task", {"taskId": "conf-orphan", "name": "Orphaned work"},
                       context)
    registry.call_tool("start_session", {"sessionId": CRASHED_SESSION, "taskId": "conf-orphan",
                                         "projectDir": "/srv/conformance"}, context)
    registry.call_tool("heartbeat", {
        "sessionId": CRASHED_SESSION, "conversationSummary": "Was editing the parser",
        "unsavedChanges": [{"type": "file_edit", "path": "src/parser.py"}]}, context)
    recovery.mark_crashed(CRASHED_SESSION)
