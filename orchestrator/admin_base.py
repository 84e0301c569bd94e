"""What every admin page shares: unknown or malformed ids are a 404, never a 500.

Django's admin answers a missing object on its change, delete and history pages with a
redirect to the index and a message, and a custom view calling ``get_object_or_404`` with
a malformed UUID raises ValidationError (a 500). The console answers both with the admin's
own 404 page (``console.views.not_found``).
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import Http404

M = TypeVar("M", bound=models.Model)


def object_or_404(model: type[M], object_id: Any) -> M:
    """The row with primary key ``object_id``; Http404 when absent or not a valid key."""
    try:
        found = model._default_manager.filter(pk=object_id).first()
    except (ValidationError, ValueError, TypeError):
        found = None
    if found is None:
        raise Http404(f"No {model._meta.verbose_name} with id {object_id!r}")
    return found


class MissingObjectIs404(admin.ModelAdmin):
    """Base of every ModelAdmin here: a missing object is a 404 page, not a redirect."""

    # Django calls this from changeform_view, delete_view and history_view when
    # get_object() found nothing (it already maps malformed ids to nothing).
    def _get_obj_does_not_exist_redirect(self, request, opts, object_id):
        raise Http404(f"No {opts.verbose_name} with id {object_id!r}")
