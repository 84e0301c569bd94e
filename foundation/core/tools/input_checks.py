"""Checks every tool input gets before its schema, whatever the tool.

JSON Schema cannot say "no NUL byte anywhere", and the schemas leave free-form values
(scratchpad patches, unsaved changes, event parts) open on purpose. These checks close
what would otherwise reach Postgres and fail there as a server fault instead of a 400:

- a NUL character: jsonb and text columns refuse ``\\u0000``;
- a lone surrogate (``\\ud800`` without its pair): not encodable as UTF-8;
- NaN and Infinity, which Python's json module accepts but JSON (and jsonb) does not;
- nesting deeper than ``MAX_DEPTH``: Postgres stops parsing at its stack limit, and
  deep values cost recursion in every layer that walks them;
- a ``date-time`` Postgres or Python cannot hold (``check_date_time``), as the schema's
  ``date-time`` format; the Rust validator accepts on its own only a stricter subset
  (``QUICK_DATE_TIME``).

The walk is iterative so that a deeply nested input cannot exhaust Python's stack.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

import jsonschema
import jsonschema_rs
from jsonschema.protocols import Validator

MAX_DEPTH = 32
# NUL, or any UTF-16 surrogate code point (in a decoded str only lone ones remain).
FORBIDDEN_CHARACTERS = re.compile("[\x00\ud800-\udfff]")


def _strict_integer(checker: Any, instance: Any) -> bool:
    """An integer is a JSON integer: ``65536.0`` is a number, not an integer.

    JSON Schema counts integral floats as integers, but the services, redis-py and the
    integer columns do not: such a value would pass validation and then fail downstream
    (a TTL as a float made redis-py refuse the command, answered as "Redis unreachable").
    """
    return isinstance(instance, int) and not isinstance(instance, bool)


_TYPE_CHECKER = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer)
ToolInputValidator = jsonschema.validators.extend(jsonschema.Draft202012Validator,
                                                  type_checker=_TYPE_CHECKER)

# A ``date-time`` input is an instant every layer can hold: RFC 3339's shape (a space for
# the T and a missing offset, meaning UTC, are taken as before), an offset of real time
# zones (at most 14 hours: Postgres refuses past 15:59, Python past 23:59), and an instant
# from 1970 up to the end of 9998. Postgres stores years down to 4713 BC, but Python (and
# so psycopg reading the row back) stops at year 1: a pause reset in year 0 once stored
# made every check_recovery that read it fail. The year of margin at the top keeps
# arithmetic such as resetsAt + grace inside Python's year 9999.
# [0-9], not \d: \d matches every Unicode digit, which no layer reads as one (and costs
# twice the time on the hook's hot path, where every tool use has a timestamp).
DATE_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}"
                       r"(?::[0-9]{2}(?:\.[0-9]{1,9})?)?(?:Z|[+-][0-9]{2}(?::?[0-9]{2})?)?")
EARLIEST_INSTANT = datetime(1970, 1, 1, tzinfo=UTC)
END_OF_INSTANTS = datetime(9999, 1, 1, tzinfo=UTC)  # exclusive
MAX_UTC_OFFSET = timedelta(hours=14)
DATE_TIME_RANGE = "1970-01-01T00:00:00Z to 9998-12-31T23:59:59Z"


def check_date_time(value: Any) -> str | None:
    """Why ``value`` is no storable ``date-time`` (see ``DATE_TIME``); None when it is, or
    when it is not a string (its type is the schema's business)."""
    if not isinstance(value, str):
        return None
    if DATE_TIME.fullmatch(value) is None:
        return "is not an ISO 8601 date-time (YYYY-MM-DDTHH:MM[:SS[.fraction]][Z|+HH:MM])"
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        return "is not a valid date and time"
    offset = stamp.utcoffset()
    if offset is not None and (offset > MAX_UTC_OFFSET or -offset > MAX_UTC_OFFSET):
        return "has a UTC offset beyond ±14:00"
    if 1970 < stamp.year < 9998:
        return None  # within range whatever the offset: no arithmetic (the common case)
    try:
        instant = stamp.replace(tzinfo=UTC) - (offset or timedelta(0))
    except OverflowError:
        instant = None
    if instant is None or not EARLIEST_INSTANT <= instant < END_OF_INSTANTS:
        return f"is outside the range of stored times ({DATE_TIME_RANGE})"
    return None


def _date_time_format(value: Any) -> bool:
    return check_date_time(value) is None


_FORMAT_CHECKER = jsonschema.FormatChecker()
# jsonschema checks date-time only when rfc3339-validator is installed (it is not): without
# this, any string passed, and Postgres refused it as a server fault.
_FORMAT_CHECKER.checks("date-time")(_date_time_format)

# What the Rust validator may accept as a date-time on its own (``quick_validator_for``):
# its RFC 3339 check (real days of real months) and this pattern: a year from 1971 to
# 9997, so that no offset moves the instant out of range, an offset within ±14:00,
# seconds below 60. Each such value passes ``check_date_time``; every other one (a
# space for the T, no offset, the edge years) is decided by it, on the Python pass.
# Calling Python from Rust for each timestamp cost the hook's record_activity ~3 µs a
# tool use; this keeps the common case native.
QUICK_DATE_TIME = (
    r"^(?:197[1-9]|19[89][0-9]|[2-8][0-9]{3}|9[0-8][0-9]{2}|99[0-8][0-9]|999[0-7])"
    r"-[0-9]{2}-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?"
    r"(?:Z|[+-](?:0[0-9]|1[0-3]):[0-5][0-9]|[+-]14:00)$")


def _quick_schema(schema: Any) -> Any:
    """``schema`` with QUICK_DATE_TIME beside every ``date-time`` format."""
    if isinstance(schema, list):
        return [_quick_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    copied = {key: _quick_schema(value) for key, value in schema.items()}
    if copied.get("format") == "date-time":
        pattern = {"pattern": QUICK_DATE_TIME}
        copied = {"allOf": [copied, pattern]} if "pattern" in copied else \
            {**copied, **pattern}
    return copied


def validator_for(schema: dict[str, Any]) -> Validator:
    """The validator used for a tool's input schema (strict integers, formats checked)."""
    ToolInputValidator.check_schema(schema)
    return ToolInputValidator(schema, format_checker=_FORMAT_CHECKER)


def format_problem(error: jsonschema.ValidationError) -> str:
    """A validation error's problem as told to the client: for a ``date-time``, why."""
    if error.validator == "format" and error.validator_value == "date-time":
        return f"{error.instance!r} {check_date_time(error.instance)}"
    return error.message


def quick_validator_for(schema: dict[str, Any]) -> Any:
    """A compiled (Rust) validator of the same schema, used only to accept input fast.

    Python's jsonschema spent 20-85 µs per call here (a save's input: 84 µs), this one
    under 1 µs. It only ever says "valid" to skip the Python pass: input it rejects, and
    any input holding a float (it counts 1.0 as an integer, which the tools do not), goes
    through ``validator_for``'s validator, which decides and words the errors. Where the
    two could disagree it is stricter: ECMA ``$`` refuses what Python's accepts, and a
    ``date-time`` must also match QUICK_DATE_TIME, so such input is decided by Python.
    """
    return jsonschema_rs.validator_for(_quick_schema(schema), validate_formats=True)


def _path(parts: tuple[Any, ...]) -> str:
    return ".".join(str(p) for p in parts) or "(root)"


def _bad_string(value: str) -> str | None:
    found = FORBIDDEN_CHARACTERS.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return "contains a NUL character (\\u0000)"
    return f"contains a lone surrogate (\\u{ord(found.group()):04x})"


def find_unstorable_value(arguments: Any) -> dict[str, str] | None:
    """The first value (or key) no backend can store, as ``{field, problem}``; else None."""
    return scan_input(arguments)[0]


def scan_input(arguments: Any) -> tuple[dict[str, str] | None, bool]:
    """(the first unstorable value as in find_unstorable_value, whether a float occurs)."""
    clean, has_float = _scan_quickly(arguments)
    if clean:
        return None, has_float
    return _scan(arguments)


def _scan_quickly(arguments: Any) -> tuple[bool, bool]:
    """(nothing unstorable, whether a float occurs): ``_scan``'s verdict on clean input,
    which is nearly all of it, without the path of every value (only the first problem
    needs one, and ``_scan`` finds it)."""
    has_float = False
    search = FORBIDDEN_CHARACTERS.search
    stack: list[tuple[Any, int]] = [(arguments, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH and value:
                return False, has_float
            items: Iterable[Any] = value
            if isinstance(value, dict):
                if any(isinstance(key, str) and search(key) for key in value):
                    return False, has_float
                items = value.values()
            for item in items:
                if isinstance(item, str):
                    if search(item):
                        return False, has_float
                elif isinstance(item, dict | list | float):
                    stack.append((item, depth + 1))
        elif isinstance(value, float):
            has_float = True
            if not math.isfinite(value):
                return False, has_float
        elif isinstance(value, str) and search(value):
            return False, has_float
    return True, has_float


def _scan(arguments: Any) -> tuple[dict[str, str] | None, bool]:
    has_float = False
    stack: list[tuple[Any, tuple[Any, ...]]] = [(arguments, ())]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            return {"field": _path(path[:MAX_DEPTH]),
                    "problem": f"is nested deeper than {MAX_DEPTH} levels"}, has_float
        if isinstance(value, str):
            problem = _bad_string(value)
            if problem:
                return {"field": _path(path), "problem": problem}, has_float
        elif isinstance(value, float):
            has_float = True
            if not math.isfinite(value):
                return {"field": _path(path), "problem": f"{value} is not a JSON number"}, True
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = _bad_string(key) if isinstance(key, str) else None
                if problem:
                    return ({"field": _path(path), "problem": f"has a key that {problem}"},
                            has_float)
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
    return None, has_float
