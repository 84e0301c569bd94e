"""Every registered tool, every input field, fed values no backend can store or no schema
allows: NUL bytes, lone surrogates, NaN, huge strings, deep nesting, floats for integers,
negative and huge numbers. Each call answers 400 with the tool's validation code (E1612 when the JSON itself is
malformed, as NaN is), and
nothing in Postgres or Redis changes.

The other fields of each call are a minimal valid input built from the schema (checked
valid first), so the 400 is caused by the bad value and nothing else.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from django.apps import apps
from django.db import connection

from foundation.backends import redis_store
from foundation.core.tools import registry
from foundation.core.tools.input_checks import MAX_DEPTH

pytestmark = pytest.mark.django_db

# Logs of the calls themselves, not data a rejected call may write.
CALL_LOGS = {"ToolInvocation", "ApiToken"}
TIMESTAMP = "2026-01-01T00:00:00Z"


def deep_value() -> Any:
    value: Any = "bottom"
    for _ in range(MAX_DEPTH + 8):
        value = {"d": [value]}
    return value


ANYWHERE = {  # wrong for every field, whatever its schema
    "NUL byte": "before\u0000after",
    "lone surrogate": "half \ud83d of an emoji",
    "NUL in a key": {"key\u0000": 1},
    "deep nesting": deep_value(),
    "NaN": float("nan"),
    "infinity": float("inf"),
}
HUGE_STRING = "x" * 200_000
NUMBERS = {"integral float": 2.0, "fractional float": 1.5, "negative": -1,
           "huge": 2**63, "huge float": 1e308}


def types_of(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type")
    return set(declared if isinstance(declared, list) else [declared] if declared else [])


def bad_values(schema: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """(what, value) pairs the field's schema must refuse."""
    yield from ANYWHERE.items()
    types = types_of(schema)
    if "maxLength" in schema:
        yield "string over maxLength", "x" * (schema["maxLength"] + 1)
    elif types & {"integer", "number", "boolean", "array", "object"}:
        yield "huge string", HUGE_STRING  # not the field's type
    if "integer" in types:
        yield from NUMBERS.items()
    elif "number" in types:
        if schema.get("minimum") is not None and schema["minimum"] >= 0:
            yield "negative", -1
        if schema.get("maximum") is not None:
            yield "huge", 2**63


def minimal_value(schema: dict[str, Any], name: str, anchors: dict[str, str]) -> Any:
    """A small value the schema accepts (real ids for fields that name tasks/sessions)."""
    if name in anchors:
        return anchors[name]
    if "enum" in schema:
        return next(v for v in schema["enum"] if v is not None)
    types = types_of(schema)
    if "object" in types:
        return {key: minimal_value(sub, key, anchors)
                for key, sub in schema.get("properties", {}).items()
                if key in schema.get("required", [])}
    if "array" in types:
        # As few items as the schema allows (claim_files needs a path).
        return [minimal_value(schema.get("items", {}), name, anchors)
                for _ in range(schema.get("minItems", 0))]
    if "string" in types:
        return TIMESTAMP if schema.get("format") == "date-time" else "fz-value"
    if "integer" in types or "number" in types:
        return max(schema.get("minimum", 1), 1)
    if "boolean" in types:
        return False
    return "fz-value"


def fields(schema: dict[str, Any], path: tuple[str, ...] = ()) -> Iterator[tuple[tuple, dict]]:
    """Every property path of an object schema, nested objects included."""
    for key, sub in schema.get("properties", {}).items():
        yield (*path, key), sub
        if "object" in types_of(sub):
            yield from fields(sub, (*path, key))


def with_value(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(base))
    target = copy
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value
    return copy


def fingerprint() -> dict[str, Any]:
    """Row count and content hash of every table the apps write, plus Redis' keys."""
    state: dict[str, Any] = {}
    with connection.cursor() as cursor:
        for model in apps.get_models():
            if model._meta.app_label not in {"contexts", "agent_sessions", "conflicts",
                                             "graph", "orchestrator"} \
                    or model.__name__ in CALL_LOGS:
                continue
            table = connection.ops.quote_name(model._meta.db_table)
            cursor.execute(f"SELECT count(*), md5(coalesce(string_agg(t::text, '|' "
                           f"ORDER BY t::text), '')) FROM {table} t")
            state[model.__name__] = cursor.fetchone()
    state["redis"] = sorted(redis_store.run(lambda r: r.keys("*")))
    return state


@pytest.fixture
def anchors(tools) -> dict[str, str]:
    """Real objects for id fields, so that valid calls would reach the services."""
    tools.ok("create_task", {"taskId": "fz-task", "name": "Fuzz"})
    tools.ok("create_task", {"taskId": "fz-other", "name": "Fuzz other"})
    session = tools.ok("start_session", {"taskId": "fz-task"})["sessionId"]
    return {"taskId": "fz-task", "taskAId": "fz-task", "taskBId": "fz-other",
            "fromTaskId": "fz-task", "toTaskId": "fz-other", "sessionId": session,
            "label": "fuzz"}


def test_every_tool_refuses_unstorable_and_out_of_range_values(tools, anchors):
    checked, problems = 0, []
    for tool in registry.tools():
        base = minimal_value(tool.input_schema, "", anchors)
        registry.validate_input(tool, base)  # the base alone is valid
        before = fingerprint()
        assert {"TaskContext", "ContextVersion", "SessionEvent", "SessionDetail",
                "ContextConflict", "TaskRelationship", "SessionOwner"} <= set(before)
        for path, schema in fields(tool.input_schema):
            for what, value in bad_values(schema):
                response = tools.call(tool.name, with_value(base, path, value))
                checked += 1
                # Malformed JSON (NaN) is refused by the parser, before any tool: E1612.
                expected = {tool.validation_code, "E1612"}
                if response.status != 400 or response.error_code not in expected:
                    problems.append(f"{tool.name}.{'.'.join(path)} = {what}: "
                                    f"{response.status} {response.error_code}")
        if fingerprint() != before:
            problems.append(f"{tool.name}: a refused call changed stored data")
    assert checked > 500
    assert not problems, "\n".join(problems)


def test_huge_body_is_refused_before_parsing(tools):
    response = tools.call("create_task", {"taskId": "fz-big", "name": "x" * 3_000_000})
    assert response.status in (400, 413) and response.error_code == "E1612"
