"""E1612 checks for task content (a save's updates plus the create_task fields).

The tool schemas already reject most bad input at the door; these checks run again in the
service because admin actions, commands, other apps and rollbacks write through it too.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from typing import Any

from contexts.services.representation import FIELD_COLUMNS
from foundation.core.errors import OrchestratorError
from foundation.core.tools.schema import TASK_STATUSES

MAX_INT = 2**31 - 1
MAX_CHANGES_BYTES = 512 * 1024
# field -> (max items, max length of one item) for the list-of-strings columns.
LIST_LIMITS = {
    "keyFiles": (500, 1000),
    "technicalDecisions": (500, 5000),
    "keywords": (100, 100),
    "lockedElements": (100, 1000),
}
# field -> (max length, nullable) for the text columns.
TEXT_LIMITS = {
    "name": (500, False),
    "description": (20000, True),
    "agentType": (100, True),
    "currentPhase": (255, True),
    "resumePrompt": (20000, True),
}
IMMEDIATE_TEXT = {"workingOn": 5000, "lastAction": 5000, "nextStep": 5000, "notes": 20000}
IMMEDIATE_FIELDS = frozenset(IMMEDIATE_TEXT) | {"blockers"}
_encode = json.JSONEncoder(default=str).encode  # json.dumps(..., default=str), built once


def _fail(field: str, problem: str, value: Any = None) -> OrchestratorError:
    details: dict[str, Any] = {"field": field, "problem": problem}
    if value is not None and not isinstance(value, dict | list):
        details["value"] = value if isinstance(value, int | float | bool) else str(value)[:200]
    return OrchestratorError("E1612", f"Invalid update: {field}: {problem}", details)


def _text(field: str, value: Any, limit: int, nullable: bool) -> str | None:
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        raise _fail(field, "must be a string" + (" or null" if nullable else ""), value)
    if len(value) > limit:
        raise _fail(field, f"is {len(value)} characters long; the limit is {limit}")
    if field == "name" and not value.strip():
        raise _fail(field, "must not be empty")
    return value


def _integer(field: str, value: Any, minimum: int, maximum: int = MAX_INT) -> int:
    # bool is an int subclass in Python; JSON true is not a number.
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, "must be an integer", value)
    if not minimum <= value <= maximum:
        raise _fail(field, f"must be between {minimum} and {maximum}", value)
    return value


def _score(value: Any) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise _fail("score", "must be a number between 0 and 100", value)
    try:
        # str() first: a float's repr is its shortest exact decimal (12.34, not 12.339999...).
        number = Decimal(str(value))
    except InvalidOperation:
        raise _fail("score", "must be a number between 0 and 100", value) from None
    if not number.is_finite() or not 0 <= number <= 100:
        raise _fail("score", "must be between 0 and 100", value)
    exponent = number.as_tuple().exponent  # an int: the number is finite
    if isinstance(exponent, int) and exponent < -2 \
            and number != number.quantize(Decimal("0.01")):
        raise _fail("score", "must have at most 2 decimal places", value)
    return number.quantize(Decimal("0.01"))


def _string_list(field: str, value: Any) -> list[str]:
    max_items, max_length = LIST_LIMITS[field]
    if not isinstance(value, list):
        raise _fail(field, "must be a list of strings", value)
    if len(value) > max_items:
        raise _fail(field, f"has {len(value)} items; the limit is {max_items}")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise _fail(f"{field}[{index}]", "must be a string", item)
        if len(item) > max_length:
            raise _fail(f"{field}[{index}]",
                        f"is {len(item)} characters long; the limit is {max_length}")
    return list(value)


def _immediate_context(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _fail("immediateContext", "must be an object", value)
    unknown = sorted(value.keys() - IMMEDIATE_FIELDS)
    if unknown:
        raise _fail("immediateContext", f"unknown field(s): {', '.join(unknown)}")
    result: dict[str, Any] = {}
    for key, limit in IMMEDIATE_TEXT.items():
        if key in value:
            result[key] = _text(f"immediateContext.{key}", value[key], limit, True)
    blockers = value.get("blockers", [])
    if not isinstance(blockers, list) or (
            blockers and not all(isinstance(b, str) for b in blockers)):
        raise _fail("immediateContext.blockers", "must be a list of strings", None)
    if blockers and (len(blockers) > 100 or any(len(b) > 2000 for b in blockers)):
        raise _fail("immediateContext.blockers", "at most 100 blockers of 2000 characters")
    result["blockers"] = list(blockers)
    return result


def validate_changes(changes: Any) -> dict[str, Any]:
    """camelCase changes -> {column: value}; raise E1612 on the first invalid field."""
    if not isinstance(changes, dict):
        raise _fail("updates", "must be an object")
    unknown = sorted(changes.keys() - FIELD_COLUMNS.keys())
    if unknown:
        raise _fail(unknown[0], "is not a writable task field")
    size = len(_encode(changes))
    if size > MAX_CHANGES_BYTES:
        raise _fail("updates", f"are {size} bytes of JSON; the limit is {MAX_CHANGES_BYTES}")
    values: dict[str, Any] = {}
    for field, value in changes.items():
        column = FIELD_COLUMNS[field]
        if field in TEXT_LIMITS:
            values[column] = _text(field, value, *TEXT_LIMITS[field])
        elif field in LIST_LIMITS:
            values[column] = _string_list(field, value)
        elif field == "status":
            if value not in TASK_STATUSES:
                raise _fail("status", f"must be one of {', '.join(TASK_STATUSES)}", value)
            values[column] = value
        elif field == "iteration":
            values[column] = _integer(field, value, 0)
        elif field == "priority":
            values[column] = _integer(field, value, 0, 1000)
        elif field == "tokenEstimate":
            values[column] = None if value is None else _integer(field, value, 0)
        elif field == "score":
            values[column] = _score(value)
        elif field == "immediateContext":
            values[column] = _immediate_context(value)
    return values
