"""The global context in the console: a form editing its fields (lists and maps as JSON),
its version history with a diff against the current state, and rollback.

The form saves through the update_global_context tool and rollback through the
global_context service, so validation (E1612) and versioning are the same as for agents.
"""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin, messages
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from console.admin.base import MissingObjectIs404, ProjectScopedAdmin, object_or_404, run_tool
from contexts.models import GlobalContext
from contexts.services import global_context
from foundation.core.errors import OrchestratorError

# Form field -> (tool field, edited as JSON?)
FORM_FIELDS = {
    "project_name": ("projectName", False),
    "description": ("description", False),
    "hard_rules": ("hardRules", True),
    "tech_stack": ("techStack", True),
    "key_paths": ("keyPaths", True),
    "services": ("services", True),
    "orchestrator_context": ("orchestratorContext", True),
}
HINTS = {
    "hard_rules": 'a JSON list of strings, e.g. ["Never push to main"]',
    "tech_stack": 'a JSON list of strings, e.g. ["Django", "PostgreSQL"]',
    "key_paths": 'a JSON object {name: path}, e.g. {"api": "src/api"}',
    "services": 'a JSON object {service: "host:port"}',
    "orchestrator_context": "a JSON object (free-form orchestrator state)",
}


def _initial(row: GlobalContext) -> dict[str, str]:
    values = {}
    for name, (_, as_json) in FORM_FIELDS.items():
        value = getattr(row, name)
        values[name] = json.dumps(value, indent=2, ensure_ascii=False) if as_json \
            else (value or "")
    return values


def _tool_input(form: dict[str, str]) -> dict[str, Any]:
    """The tool's input from the posted form; E1612 naming the field that is not JSON."""
    arguments: dict[str, Any] = {}
    for name, (field, as_json) in FORM_FIELDS.items():
        raw = form.get(name, "")
        if not as_json:
            arguments[field] = raw if raw or name != "description" else None
            continue
        try:
            arguments[field] = json.loads(raw)
        except ValueError as exc:
            raise OrchestratorError("E1612", f"Invalid update: {field}: not valid JSON ({exc})",
                                    {"field": field}) from None
    if form.get("change_summary"):
        arguments["changeSummary"] = form["change_summary"]
    return arguments


def _version_or_404(request: HttpRequest) -> int:
    try:
        return int(request.GET.get("version") or request.POST.get("version") or "")
    except ValueError:
        raise Http404("version must be a number") from None


@admin.register(GlobalContext)
class GlobalContextAdmin(ProjectScopedAdmin, MissingObjectIs404):
    list_display = ("project_id", "project", "project_name", "active_task_id", "version",
                    "updated_at")
    ordering = ("project_id",)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # one row per project, created by the migration

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_urls(self):
        return [path("<path:object_id>/rollback/",
                     self.admin_site.admin_view(self.rollback_view),
                     name="contexts_globalcontext_rollback"), *super().get_urls()]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict | None = None) -> HttpResponse:
        row = object_or_404(GlobalContext, object_id)
        if not self.has_view_permission(request, row):
            return HttpResponse(status=403)
        form, error, status = _initial(row), None, 200
        if request.method == "POST":
            if not self.has_change_permission(request, row):
                return HttpResponse(status=403)
            form = {name: request.POST.get(name, "") for name in FORM_FIELDS}
            try:
                result = run_tool(request, "update_global_context",
                                  {**_tool_input(request.POST), "projectId": row.project_id})
            except OrchestratorError as exc:
                error, status = exc, 400
            else:
                changed = ", ".join(result["changed"]) or "nothing changed"
                self.message_user(request, f"Saved: {changed}; now version {result['version']}",
                                  messages.SUCCESS)
                return HttpResponseRedirect(request.path)
        diff_version, diff, diff_error = request.GET.get("diff"), None, None
        if diff_version:
            try:
                diff = global_context.diff_with_version(row.project_id, int(diff_version))
            except (ValueError, OrchestratorError) as exc:
                diff_error = str(exc)
        return TemplateResponse(request, "admin/contexts/globalcontext/edit.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": f"Global context of {row.project_id}", "row": row,
            "fields": [(name, HINTS.get(name), form[name]) for name in FORM_FIELDS],
            "error": error,
            "can_change": self.has_change_permission(request, row),
            "versions": global_context.versions(row.project_id),
            "diff_version": diff_version,
            "diff": diff, "diff_error": diff_error,
        }, status=status)

    def rollback_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        row = object_or_404(GlobalContext, object_id)
        if not self.has_change_permission(request, row):
            return HttpResponse(status=403)
        version = _version_or_404(request)
        page = reverse("admin:contexts_globalcontext_change", args=[row.pk])
        try:
            if request.method == "POST":
                result = run_tool(request, "rollback_global_context",
                                  {"version": version, "projectId": row.project_id})
                self.message_user(request, f"Rolled back to version {version}; now version "
                                  f"{result['version']}", messages.SUCCESS)
                return HttpResponseRedirect(page)
            changes = global_context.diff_with_version(row.project_id, version)
        except OrchestratorError as exc:
            if exc.code == "E1623":
                raise Http404(exc.message) from None
            self.message_user(request, f"{exc.code}: {exc.message}", messages.ERROR)
            return HttpResponseRedirect(page)
        return TemplateResponse(request, "admin/contexts/globalcontext/rollback_confirm.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta,
            "title": f"Roll the global context back to version {version}?", "row": row,
            "version": version, "changes": changes, "change_url": page})
