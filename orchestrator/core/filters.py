"""Query-string filters the apps' browsing APIs share."""

from __future__ import annotations

import datetime as dt

import django_filters
from django import forms


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
