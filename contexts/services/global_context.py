"""Editing the project's global context: hard rules, tech stack, key paths,
services, and rolling it back to an earlier version.

The write path is the tasks' one: validate (E1612), Postgres in one transaction with the
row locked and who/why set for the versioning trigger (migration 0002 writes the history
row), then the shared/project-constants.json backup; a file failure is reported in
``savedTo`` and repaired by the next hot sync, never fails the save. ``active_task_id``
is not edited here: it belongs to switch_task.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from django.conf import settings
from django.db import transaction

from contexts.models import GlobalContext, GlobalContextVersion
from contexts.services import edit_policy, representation
from contexts.services.sync import write_project_constants
from foundation.core.db import set_change_context
from foundation.core.errors import OrchestratorError
from foundation.core.stamps import now_iso

logger = logging.getLogger("orchestrator.contexts")

# camelCase field -> column, for every field update_global_context may change.
GLOBAL_FIELDS = {
    "projectName": "project_name",
    "description": "description",
    "hardRules": "hard_rules",
    "techStack": "tech_stack",
    "keyPaths": "key_paths",
    "services": "services",
    "orchestratorContext": "orchestrator_context",
}
COLUMN_FIELDS = {column: field for field, column in GLOBAL_FIELDS.items()}
LIST_FIELDS = {"hardRules": (200, 2000), "techStack": (200, 200)}  # (max items, max length)
MAP_FIELDS = {"keyPaths": (200, 1000), "services": (200, 1000)}  # (max entries, max value)
MAX_KEY_LENGTH = 255
MAX_DESCRIPTION = 20000
MAX_PROJECT_NAME = 500
MAX_ORCHESTRATOR_CONTEXT_BYTES = 64 * 1024


def _fail(field: str, problem: str) -> OrchestratorError:
    return OrchestratorError("E1612", f"Invalid update: {field}: {problem}",
                             {"field": field, "problem": problem})


def _string_list(field: str, value: Any) -> list[str]:
    max_items, max_length = LIST_FIELDS[field]
    if not isinstance(value, list):
        raise _fail(field, "must be a list of strings")
    if len(value) > max_items:
        raise _fail(field, f"has {len(value)} items; the limit is {max_items}")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _fail(f"{field}[{index}]", "must be a non-empty string")
        if len(item) > max_length:
            raise _fail(f"{field}[{index}]", f"is longer than {max_length} characters")
    return list(value)


def _string_map(field: str, value: Any) -> dict[str, str]:
    max_entries, max_length = MAP_FIELDS[field]
    if not isinstance(value, dict):
        raise _fail(field, "must be an object of strings")
    if len(value) > max_entries:
        raise _fail(field, f"has {len(value)} entries; the limit is {max_entries}")
    for key, item in value.items():
        if not key.strip() or len(key) > MAX_KEY_LENGTH:
            raise _fail(field, f"keys must be 1-{MAX_KEY_LENGTH} characters")
        if not isinstance(item, str):
            raise _fail(f"{field}.{key}", "must be a string")
        if len(item) > max_length:
            raise _fail(f"{field}.{key}", f"is longer than {max_length} characters")
    return dict(value)


def validate_global_changes(changes: Any) -> dict[str, Any]:
    """camelCase changes -> {column: value}; E1612 naming the first invalid field."""
    if not isinstance(changes, dict):
        raise _fail("(root)", "must be an object")
    unknown = sorted(set(changes) - set(GLOBAL_FIELDS))
    if unknown:
        raise _fail(unknown[0], "is not a writable global context field")
    values: dict[str, Any] = {}
    for field, value in changes.items():
        column = GLOBAL_FIELDS[field]
        if field == "projectName":
            if not isinstance(value, str) or not value.strip() or len(value) > MAX_PROJECT_NAME:
                raise _fail(field, f"must be 1-{MAX_PROJECT_NAME} characters")
            values[column] = value
        elif field == "description":
            if value is not None and (not isinstance(value, str)
                                      or len(value) > MAX_DESCRIPTION):
                raise _fail(field, f"must be null or at most {MAX_DESCRIPTION} characters")
            values[column] = value
        elif field in LIST_FIELDS:
            values[column] = _string_list(field, value)
        elif field in MAP_FIELDS:
            values[column] = _string_map(field, value)
        else:  # orchestratorContext: free-form state, bounded in size
            if not isinstance(value, dict):
                raise _fail(field, "must be an object")
            if len(json.dumps(value)) > MAX_ORCHESTRATOR_CONTEXT_BYTES:
                raise _fail(field, f"is over {MAX_ORCHESTRATOR_CONTEXT_BYTES} bytes of JSON")
            if edit_policy.POLICY_KEY in value:  # the project's edit policy (live claims)
                value = {**value, edit_policy.POLICY_KEY: edit_policy.validate_policy(
                    value[edit_policy.POLICY_KEY])}
            values[column] = value
    return values


def _locked_row(project_id: str) -> GlobalContext:
    row = (GlobalContext.objects.select_for_update().filter(project_id=project_id).first())
    if row is None:
        raise OrchestratorError(
            "E1611", f"Global context for project {project_id!r} is missing",
            {"projectId": project_id})
    return row


def _write(project_id: str, values: dict[str, Any], *, change_type: str,
           change_summary: str | None, session_id: str | None,
           actor: str | None) -> tuple[GlobalContext, list[str]]:
    """Apply column values to the locked row; (row as committed, changed camelCase fields)."""
    with transaction.atomic():
        row = _locked_row(project_id)
        changed = [column for column, value in values.items() if getattr(row, column) != value]
        if changed:
            set_change_context(change_type=change_type, change_summary=change_summary,
                               session_id=session_id, created_by=actor or session_id)
            GlobalContext.objects.filter(pk=row.pk).update(
                **{column: values[column] for column in changed})
            row.refresh_from_db()
    return row, [COLUMN_FIELDS[column] for column in changed]


def _answer(row: GlobalContext, changed: list[str]) -> dict[str, Any]:
    file_ok = True
    if changed and settings.ENABLE_FILE_SYNC:
        try:
            write_project_constants(row)
        except OSError as exc:
            file_ok = False
            logger.warning("project-constants.json not written: %s", exc)
    return {
        "success": True,
        "projectId": row.project_id,
        "version": row.version,
        "changed": changed,
        "global": global_state(row),
        "savedTo": {"database": True, "file": file_ok},
        "timestamp": now_iso(),
    }


def global_state(row: GlobalContext) -> dict[str, Any]:
    """Every editable field, camelCase, as the tool answers it."""
    return {"projectName": row.project_name, "description": row.description,
            **representation.global_part(row),
            "orchestratorContext": dict(row.orchestrator_context or {})}


def update_global_context(project_id: str, changes: dict[str, Any], *,
                          change_summary: str | None = None, session_id: str | None = None,
                          actor: str | None = None) -> dict[str, Any]:
    """Change the listed fields of the project's global context; an unchanged value makes
    no version. E1611, E1612."""
    values = validate_global_changes(changes)
    row, changed = _write(project_id, values, change_type="manual",
                          change_summary=change_summary, session_id=session_id, actor=actor)
    logger.info("global context updated", extra={"projectId": project_id,
                                                 "version": row.version, "changed": changed})
    return _answer(row, changed)


def versions(project_id: str, limit: int = 100) -> list[GlobalContextVersion]:
    """The project row's history, newest first."""
    row = GlobalContext.objects.filter(project_id=project_id).first()
    if row is None:
        return []
    return list(GlobalContextVersion.objects.filter(context_id=row.pk)
                .order_by("-version")[:limit])


def _version_values(project_id: str, version: int) -> dict[str, Any]:
    row = GlobalContext.objects.filter(project_id=project_id).first()
    snapshot = (GlobalContextVersion.objects.filter(context_id=getattr(row, "pk", None),
                                                    version=version)
                .values_list("snapshot", flat=True).first())
    if snapshot is None:
        raise OrchestratorError("E1623", f"The global context has no version {version}",
                                {"version": version})
    if not isinstance(snapshot, dict) or not snapshot.get("project_name"):
        raise OrchestratorError("E1624", f"Version {version} of the global context is "
                                "unreadable", {"version": version})
    return {column: snapshot.get(column) for column in COLUMN_FIELDS}


def diff_with_version(project_id: str, version: int) -> list[dict[str, Any]]:
    """[{field, current, restored}] for every editable field that differs from ``version``."""
    restored = _version_values(project_id, version)
    current = GlobalContext.objects.filter(project_id=project_id).first()
    if current is None:
        raise OrchestratorError("E1611", "Global context is missing")
    return [{"field": COLUMN_FIELDS[column], "current": getattr(current, column),
             "restored": value}
            for column, value in restored.items() if getattr(current, column) != value]


def rollback_global_context(project_id: str, version: int, *, actor: str | None = None,
                            session_id: str | None = None) -> dict[str, Any]:
    """Restore the editable fields of ``version``; saved as a new version. E1623, E1624."""
    values = _version_values(project_id, version)
    row, changed = _write(project_id, values, change_type="manual",
                          change_summary=f"Rollback to version {version}",
                          session_id=session_id, actor=actor)
    logger.info("global context rolled back", extra={"projectId": project_id, "to": version,
                                                     "version": row.version})
    return _answer(row, changed)
