"""Query-string filters the apps' browsing APIs share."""

from __future__ import annotations

import datetime as dt
from typing import Any

import django_filters
from django import forms
from rest_framework import filters

from foundation.core.errors import OrchestratorError


class UtcDateTimeField(django_filters.fields.IsoDateTimeField):
    """An ISO 8601 instant, handed to Postgres in UTC. Python accepts offsets up to
    ±23:59 and years down to 1, Postgres only ±15:59 and no year 0: in UTC every
    instant Python can hold is one Postgres can compare, and the ones that leave the
    calendar (0001-01-01T00:00+01:00) are a 400, not a failed query."""

    def to_python(self, value):
        instant = super().to_python(value)
        if instant is None or instant.tzinfo is None:
            return instant
        try:
            return instant.astimezone(dt.UTC)
        except OverflowError:
            raise forms.ValidationError("date out of range", code="invalid") from None


class UtcDateTimeFilter(django_filters.IsoDateTimeFilter):
    field_class = UtcDateTimeField


class StrictBooleanField(forms.NullBooleanField):
    """true or false (also True/False/1/0), empty as absent, anything else invalid (400).
    Django's NullBooleanField reads every other value as "no filter": ?active=yes would
    list inactive rows too, silently."""

    widget = forms.TextInput  # NullBooleanSelect maps unknown values to None before us

    def to_python(self, value):
        if value in (None, ""):
            return None
        if value in (True, "True", "true", "1"):
            return True
        if value in (False, "False", "false", "0"):
            return False
        raise forms.ValidationError("Must be true or false", code="invalid")


class StrictBooleanFilter(django_filters.BooleanFilter):
    field_class = StrictBooleanField


def check_query_parameters(request: Any) -> None:
    """E1612 (400) for a query parameter Postgres cannot compare: a NUL character in its
    name or value. Each filter checks its own values (django-filter: a bad choice, date or
    boolean is a 400; pagination: foundation.core.pagination)."""
    for name, values in request.query_params.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "\\0")
            raise OrchestratorError(
                "E1612", f"Invalid query parameter {shown}: contains a NUL character",
                [{"field": shown, "problem": "contains a NUL character"}])


class QueryParameterCheck(filters.BaseFilterBackend):
    """The first browsing filter (settings.REST_FRAMEWORK): ``check_query_parameters``."""

    def filter_queryset(self, request, queryset, view):
        check_query_parameters(request)
        return queryset
