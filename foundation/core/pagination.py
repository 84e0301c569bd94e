"""Pagination of the browsing API: a bad page parameter is a 400, never a 500.

DRF's own classes quietly ignore a limit or offset they cannot read (``?limit=abc`` gives
the default page) and pass an integer beyond Postgres' bigint straight to the query
(``?limit=99999999999999999999``: a failed query, 500). Here every page parameter is a
decimal integer within its range, else 400 E1612 naming it, the same answer on every list
endpoint (the default class for all of them, in settings.REST_FRAMEWORK; the cursor classes
of the append-only logs derive from ``StrictCursorPagination``).
"""

from __future__ import annotations

import re
from base64 import b64decode
from typing import Any, overload
from urllib import parse

from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination

from foundation.core.errors import OrchestratorError

MAX_LIMIT = 1000
MAX_OFFSET = 2**31 - 1
DIGITS = re.compile(r"[0-9]{1,12}")  # no sign, no point, no exponent, no spaces
SIGNED_DIGITS = re.compile(r"-?[0-9]{1,18}")  # a cursor position of an integer column


def bad_parameter(name: str, problem: str, value: Any) -> OrchestratorError:
    return OrchestratorError("E1612", f"Invalid query parameter {name}: {problem}",
                             [{"field": name, "problem": problem, "value": str(value)[:100]}])


@overload
def query_integer(request: Any, name: str, default: int, *, minimum: int,
                  maximum: int) -> int: ...
@overload
def query_integer(request: Any, name: str, default: int | None, *, minimum: int,
                  maximum: int) -> int | None: ...
def query_integer(request: Any, name: str, default: int | None, *, minimum: int,
                  maximum: int) -> int | None:
    """The integer query parameter ``name`` (``default`` when absent); E1612 otherwise."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    if not DIGITS.fullmatch(raw) or not minimum <= int(raw) <= maximum:
        raise bad_parameter(name, f"must be an integer from {minimum} to {maximum}", raw)
    return int(raw)


def _integer_schema(minimum: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum, "maximum": maximum}


class StrictLimitOffsetPagination(LimitOffsetPagination):
    """?limit= (1-1000, default PAGE_SIZE) and ?offset= (0 to 2^31-1, default 0)."""

    max_limit = MAX_LIMIT

    def get_limit(self, request) -> int | None:
        return query_integer(request, self.limit_query_param, self.default_limit,
                             minimum=1, maximum=self.max_limit)

    def get_offset(self, request) -> int:
        return query_integer(request, self.offset_query_param, 0, minimum=0,
                             maximum=MAX_OFFSET)

    def get_schema_operation_parameters(self, view) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        bounds = {self.limit_query_param: (1, self.max_limit),
                  self.offset_query_param: (0, MAX_OFFSET)}
        for parameter in parameters:
            if parameter["name"] in bounds:
                parameter["schema"] = _integer_schema(*bounds[parameter["name"]])
        return parameters


class StrictCursorPagination(CursorPagination):
    """Cursor pages ordered by one integer column: ?limit= (1 to max_page_size) and a
    ?cursor= this API made; anything else is 400 E1612 (DRF answers a bad cursor 404)."""

    page_size = 100
    page_size_query_param = "limit"
    max_page_size = 1000

    def get_page_size(self, request) -> int:
        return query_integer(request, self.page_size_query_param, self.page_size,
                             minimum=1, maximum=self.max_page_size)

    def decode_cursor(self, request) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            if not encoded:
                raise ValueError("empty cursor")
            tokens = parse.parse_qs(b64decode(encoded.encode("ascii"), validate=True)
                                    .decode("ascii"), keep_blank_values=True)
            offset, reverse = tokens.get("o", ["0"])[0], tokens.get("r", ["0"])[0]
            position = tokens.get("p", [None])[0]
        except (TypeError, ValueError):
            raise bad_parameter(self.cursor_query_param, "is not a cursor of this list",
                                encoded) from None
        if (not DIGITS.fullmatch(offset) or int(offset) > self.offset_cutoff
                or reverse not in ("0", "1")
                or (position is not None and not SIGNED_DIGITS.fullmatch(position))):
            raise bad_parameter(self.cursor_query_param, "is not a cursor of this list",
                                encoded)
        return Cursor(offset=int(offset), reverse=reverse == "1", position=position)

    def get_schema_operation_parameters(self, view) -> list[dict[str, Any]]:
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"] = _integer_schema(1, self.max_page_size)
        return parameters
