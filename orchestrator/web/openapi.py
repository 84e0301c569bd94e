"""The OpenAPI document says what the server really answers (``make fuzz`` checks it).

Error answers: drf-spectacular documents only the success answer. A client (and
``make fuzz``, which checks every answer against the document) also meets the errors:
the spec's error object ({success: false, error: {code, message, details}, timestamp})
with an E16xx code. Which statuses an operation can answer:

- every operation: 401 (no or bad token), 429 (the token's rate limit, with Retry-After),
  500 (a server fault) and 503 (PostgreSQL unreachable);
- a browsing operation (GET): 400 for a bad query parameter; 404 when its path names an
  object, or the view says it can (``ERROR_STATUSES`` on the view adds statuses);
- a tool (``orchestrator.web.rest``): every status of the E16xx registry and 413.

Each status' description lists the E16xx codes it carries, from the registry.

Two corrections of drf-spectacular's mapping:

- a browsing filter's empty value is as if absent (``?status=`` lists everything, as
  django-filter reads it): its parameter also admits ``""``, else a client generating
  from the document would take ``?createdAfter=`` for an error;
- a tool's body is required when its input schema requires a property (no body is
  ``{}``, refused then); drf-spectacular never requires a body given as a JSON Schema;
- a nullable JSON field is any JSON value: drf-spectacular writes
  ``oneOf: [{}, {type: null}]``, which ``null`` matches twice and so never validates.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import ResolvedComponent
from rest_framework import serializers

from foundation.core.errors import REGISTRY as ERROR_CODES
from foundation.core.tools.schema import ERROR_OBJECT

EVERY_OPERATION = (401, 429, 500, 503)
BROWSING = (400,)
TOO_LARGE = 413  # a body over DATA_UPLOAD_MAX_MEMORY_SIZE: E1612, not a registry status
RETRY_AFTER = {"Retry-After": {
    "description": "Seconds until the token may call again",
    "schema": {"type": "string", "pattern": "^[0-9]+$"}}}


def status_description(status: int) -> str:
    codes = [f"{e.code} {e.name}" for e in ERROR_CODES.values() if e.http_status == status]
    if status == TOO_LARGE:
        codes.insert(0, "E1612 (request body too large)")
    if status == 429 and not codes:
        codes = ["the token's rate limit"]
    return "Error object: " + ", ".join(codes)


def admits_empty(schema: dict[str, Any]) -> bool:
    """Whether ``""`` is valid under a (simple) parameter schema."""
    return (schema.get("type") == "string" and not schema.keys() & {"format", "enum", "pattern"}
            and not schema.get("minLength"))


class OrchestratorSchema(AutoSchema):
    """settings.REST_FRAMEWORK's schema class (see the module's docstring)."""

    def _get_filter_parameters(self) -> list[dict[str, Any]]:
        parameters = super()._get_filter_parameters()
        for parameter in parameters:
            schema = parameter.get("schema")
            if parameter.get("in") == "query" and schema and not admits_empty(schema):
                parameter["schema"] = {"anyOf": [schema, {"const": ""}]}
        return parameters

    def _get_request_for_media_type(self, serializer, direction="request"):
        schema, required = super()._get_request_for_media_type(serializer, direction)
        if isinstance(serializer, dict) and serializer.get("required"):
            required = True
        return schema, required

    def _get_serializer_field_meta(self, field, direction) -> dict[str, Any]:
        meta = super()._get_serializer_field_meta(field, direction)
        if isinstance(field, serializers.JSONField):
            meta.pop("nullable", None)  # {} (any value) already admits null
        return meta

    def error_statuses(self) -> set[int]:
        statuses = set(EVERY_OPERATION) | set(getattr(self.view, "ERROR_STATUSES", ()))
        if self.method == "GET":
            statuses |= set(BROWSING)
            if "{" in self.path:
                statuses.add(404)
        return statuses

    def _get_response_bodies(self, direction: str = "response") -> dict[str, Any]:
        responses = super()._get_response_bodies(direction)
        if direction != "response":
            return responses
        component = ResolvedComponent(name="Error", type=ResolvedComponent.SCHEMA,
                                      schema=ERROR_OBJECT, object="Error")
        self.registry.register_on_missing(component)
        for status in sorted(self.error_statuses()):
            answer: dict[str, Any] = {
                "description": status_description(status),
                "content": {"application/json": {"schema": component.ref}}}
            if status == 429:
                answer["headers"] = RETRY_AFTER
            responses.setdefault(str(status), answer)
        return responses
