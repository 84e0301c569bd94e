"""Context tools: read, save, checkpoint, roll back, switch, sync, the global context and
critical keys, and create_task.

Each tool only declares its schemas and calls a service in contexts/services/.
"""

from __future__ import annotations

from typing import Any

from contexts.services import (
    checkpoint_check,
    checkpoint_list,
    checkpoints,
    critical,
    global_context,
    pending,
    projects,
    rollback,
    save,
    switch,
    sync,
    tasks,
    unified,
)
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import (
    CHECKPOINT_SCOPES,
    CHECKPOINT_TYPES,
    IMMEDIATE_CONTEXT,
    MAX_TASK_ID_LENGTH,
    TASK_STATUSES,
    TIMESTAMP,
    array,
    boolean,
    integer,
    number,
    obj,
    project_id,
    safe_id,
    string,
    string_list,
)
from locks.services import LOCK_RULE

SAVED_TO = obj({"database": boolean(), "redis": boolean(), "file": boolean()},
               ["database", "redis", "file"])
SESSION_ID = safe_id("Session making the change (recorded on the version)")

TASK_FIELDS = {
    "name": string("Display name", min_length=1, max_length=500),
    "description": string(max_length=20000, nullable=True),
    "agentType": string(max_length=100, nullable=True),
    "status": string(enum=TASK_STATUSES),
    "priority": integer(minimum=0, maximum=1000),
    "currentPhase": string(max_length=255, nullable=True),
    "iteration": integer(minimum=0),
    "score": number("0-100, two decimals", minimum=0, maximum=100, nullable=True),
    "keyFiles": string_list("File paths this task touches", max_length=1000),
    "technicalDecisions": string_list(max_length=5000),
    "keywords": string_list(max_items=100, max_length=100),
    "immediateContext": IMMEDIATE_CONTEXT,
    "lockedElements": string_list("Field names (e.g. keyFiles) or file paths only the lock "
                                  "holder may change", max_items=100, max_length=1000),
    "resumePrompt": string(max_length=20000, nullable=True),
}
UPDATE_FIELDS = ("currentPhase", "iteration", "score", "status", "immediateContext",
                 "keyFiles", "technicalDecisions", "resumePrompt", "lockedElements")
TASK_REF = obj({"taskId": string(), "name": string(), "status": string(nullable=True)},
               additional=True)


def _actor(ctx: ToolContext) -> str | None:
    return ctx.actor or None


register(Tool(
    name="create_task",
    description=(
        "Create a task context in a project (projectId; default: the token's only project, "
        "else the default project). The database records it as version 1. Task ids are "
        "unique across projects: an existing taskId is refused with E1614 (409); an "
        "unknown project is E1605."
    ),
    input_schema=obj({"taskId": safe_id(f"Unique task id: letters, digits, . _ : -, at most "
                                         f"{MAX_TASK_ID_LENGTH} characters",
                                         max_length=MAX_TASK_ID_LENGTH),
                      "projectId": project_id(), **TASK_FIELDS}, ["taskId", "name"]),
    output_schema=obj({"success": boolean(), "taskId": string(), "projectId": string(),
                       "version": integer(), "createdAt": TIMESTAMP, "savedTo": SAVED_TO},
                      ["success", "taskId", "projectId", "version", "createdAt"]),
    handler=lambda args, ctx: tasks.create_task(
        args["taskId"], {k: v for k, v in args.items() if k not in ("taskId", "projectId")},
        project_id=args.get("projectId") or ctx.default_project(), created_by=_actor(ctx)),
    creates=frozenset({"taskId"}),
))


register(Tool(
    name="get_unified_context",
    description=(
        "Aggregate the global context and, with taskId, the task (served from the Redis "
        "cache when present), its relationships, unresolved conflicts and version "
        "history. The global context is the task's project's (without a task: "
        "projectId's, default the caller's project); projectId in the answer names it. "
        "depth hot|warm|cold limits the tiers (hot: global + task; warm: + "
        "relationships, conflicts; cold: + version history); maxTokens (tokens ~ JSON "
        "length / 4) drops cold parts first, then warm, never hot, listed in "
        "metadata.dropped. metadata.source: cache (task from Redis), hybrid (task from "
        "Redis plus relationships/history from Postgres), database."
    ),
    input_schema=obj({
        "taskId": safe_id("Task to load; omit for the global context only"),
        "projectId": project_id("Project whose global context to load without a task"),
        "includeRelationships": boolean(default=True),
        "includeVersionHistory": boolean(default=False),
        "maxVersions": integer("Default MAX_VERSIONS_DEFAULT, capped at MAX_VERSIONS_LIMIT",
                               minimum=1),
        "depth": string("Deepest tier to include (default cold = everything requested)",
                        enum=unified.TIERS),
        "maxTokens": integer("Token budget of the answer", minimum=1),
    }),
    output_schema=obj({
        "projectId": string(),
        "global": obj({"hardRules": string_list(), "techStack": string_list(),
                       "keyPaths": {"type": "object"}, "services": {"type": "object"}}),
        "task": {"type": "object"},
        "relationships": obj({k: array(TASK_REF) for k in
                              ("blocks", "blockedBy", "dependsOn", "relatedTo")},
                             additional=True),
        "versionHistory": array(obj({"version": integer(), "createdAt": TIMESTAMP,
                                     "changeType": string(nullable=True),
                                     "changeSummary": string()})),
        "conflicts": array(obj({"id": string(), "type": string(), "severity": string(),
                                "description": string()})),
        "metadata": obj({"source": string(enum=("database", "cache", "hybrid")),
                         "loadedAt": TIMESTAMP, "cacheHit": boolean(),
                         "depth": string(enum=unified.TIERS), "tokenEstimate": integer(),
                         "dropped": string_list()}, ["source", "loadedAt", "cacheHit"],
                        additional=True),
    }, ["projectId", "global", "metadata"], additional=True),
    handler=lambda args, ctx: unified.get_unified_context(
        args.get("taskId"), project_id=args.get("projectId") or ctx.default_project(),
        include_relationships=args.get("includeRelationships", True),
        include_version_history=args.get("includeVersionHistory", False),
        max_versions=args.get("maxVersions"), depth=args.get("depth"),
        max_tokens=args.get("maxTokens")),
    read_only=True,
))


def _save(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    # Saves held while Postgres was down go first: a later save must not be overtaken.
    pending.replay_if_any(ctx)
    return save.save_task_changes(
        args["taskId"], args.get("updates") or {}, change_summary=args.get("changeSummary"),
        session_id=args.get("sessionId"), actor=_actor(ctx),
        sync_to_file=args.get("syncToFile", True))


register(Tool(
    name="save_context_snapshot",
    description=(
        "Apply updates to a task and persist it to Postgres (versioned by the trigger), the "
        "Redis cache and the file backup. savedTo says which backends really "
        "took the write; a Redis or file failure does not fail the save. graph says what "
        "the save means for the graph mirror, which is updated off the request path: "
        "queued, unchanged or disabled. A paused session (pause_session) may save its "
        "own work. While PostgreSQL is unreachable the save is held in "
        "RECOVERY_DIR/.pending-saves.json: HTTP 202 with success true, "
        "pending true, pendingSaveId, version null and savedTo {database: false, redis: "
        "false, file: true}; held saves are applied in order, each exactly once, when "
        "PostgreSQL is back (before the next save, and by the periodic job "
        "replay_pending_saves); do not send a held save again. E1654 (503) only when the "
        "file cannot be written either. E1610, E1612, E1613 (locked). " + LOCK_RULE
    ),
    input_schema=obj({
        "taskId": safe_id("Task to save"),
        "updates": obj({k: TASK_FIELDS[k] for k in UPDATE_FIELDS}),
        "changeSummary": string(max_length=2000, nullable=True),
        "sessionId": SESSION_ID,
        "syncToFile": boolean(default=True),
    }, ["taskId"]),
    output_schema=obj({"success": boolean(), "taskId": string(),
                       "version": {"type": ["integer", "null"],
                                   "description": "The new version; null while the save "
                                                  "is pending (held while PostgreSQL is "
                                                  "unreachable)"},
                       "savedTo": SAVED_TO,
                       "pending": boolean("Held in RECOVERY_DIR/.pending-saves.json while "
                                          "PostgreSQL is unreachable; applied when it is "
                                          "back"),
                       "pendingSaveId": string("The held save's id (its replay is "
                                               "recorded under it, once)"),
                       "pendingPosition": integer("Its place in the queue of held saves"),
                       "message": string(),
                       "graph": string("The graph mirror: 'queued' (an update committed "
                                       "with the save, applied shortly), 'unchanged' or "
                                       "'disabled'", enum=("queued", "unchanged", "disabled")),
                       "timestamp": TIMESTAMP},
                      ["success", "taskId", "version", "savedTo", "timestamp"]),
    handler=_save,
    when_database_down=pending.hold_save,
))

register(Tool(
    name="replay_pending_saves",
    description=(
        "Apply the saves held in RECOVERY_DIR/.pending-saves.json while PostgreSQL was "
        "unreachable, in order, each exactly once (its id recorded with it); one refused "
        "on replay is moved to .pending-saves.rejected.json. Beat runs it every "
        "HEARTBEAT_INTERVAL_MS; manage.py replay_pending_saves runs it once; the next "
        "save runs it first."
    ),
    input_schema=obj({}),
    output_schema=obj({"success": boolean(), "applied": string_list("Held saves applied"),
                       "skipped": string_list("Held saves applied before (not again)"),
                       "rejected": string_list("Held saves the service refused"),
                       "remaining": integer("Still held: PostgreSQL unreachable again")},
                      ["success", "applied", "skipped", "rejected", "remaining"]),
    handler=lambda args, ctx: pending.replay_pending_saves(),
    internal=True,
))


def _checkpoint(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return checkpoints.create_checkpoint(
        args["label"], task_id=args.get("taskId"), include_tasks=args.get("includeTasks"),
        project_id=args.get("projectId") or ctx.default_project(),
        description=args.get("description"),
        checkpoint_type=args.get("checkpointType", "manual"),
        session_id=args.get("sessionId"), actor=_actor(ctx), force=args.get("force", False),
        tags=args.get("tags"), agent_id=args.get("agentId"))


register(Tool(
    name="create_checkpoint",
    description=(
        "Store a named snapshot of the global context and the included tasks. "
        "Scope: no task -> global, one -> task, more -> multi_task; the global context is "
        "that of the tasks' project (tasks of two projects: E1607), without tasks "
        "projectId's. The snapshot carries a "
        "sha256 checksum verified on every restore. Repeating a call (same label, same "
        "task(s), content unchanged since that label's latest checkpoint) stores nothing "
        "unless force is true: the answer has deduplicated: true and the existing "
        "checkpointId. A different label is always a new checkpoint."
    ),
    input_schema=obj({
        "label": string(min_length=1, max_length=500),
        "description": string(max_length=20000, nullable=True),
        "taskId": safe_id("Task of a task-scoped checkpoint"),
        "projectId": project_id("Project of a global checkpoint (no task)"),
        "checkpointType": string(enum=CHECKPOINT_TYPES),
        "includeTasks": array(safe_id("Task id"), max_items=1000),
        "sessionId": SESSION_ID,
        "force": boolean("Store even if identical to this label's latest checkpoint",
                         default=False),
        "tags": array(string(min_length=1, max_length=100), max_items=20,
                      description="Tags to find the checkpoint by"),
        "agentId": string("The agent making it (default: the session's agent)",
                          min_length=1, max_length=255),
    }, ["label"]),
    output_schema=obj({"success": boolean(), "checkpointId": string(), "projectId": string(),
                       "label": string(),
                       "scope": string(enum=CHECKPOINT_SCOPES),
                       "includedTasks": string_list(), "createdAt": TIMESTAMP,
                       "deduplicated": boolean()},
                      ["success", "checkpointId", "label", "scope", "includedTasks",
                       "createdAt"]),
    handler=_checkpoint,
    validation_code="E1621",
    task_group=("taskId", "includeTasks"),
))


LISTED_CHECKPOINT = obj({
    "checkpointId": string(), "projectId": string(), "label": string(),
    "description": string(nullable=True), "checkpointType": string(nullable=True),
    "taskId": string(nullable=True), "scope": string(enum=CHECKPOINT_SCOPES),
    "includedTasks": string_list(), "createdBy": string(nullable=True),
    "sessionId": string(nullable=True), "createdAt": TIMESTAMP,
    "size": integer("Bytes stored (the snapshot as JSON text; counts against the "
                    "project's storage quota)", minimum=0, maximum=2 ** 53),
    "originalSize": {"type": ["integer", "null"],
                     "description": "Bytes of the content's canonical JSON"},
    "storedBytes": integer("Bytes Postgres stores for the snapshot (after its own "
                           "compression)", minimum=0, maximum=2 ** 53),
    "hash": string("The snapshot's checksum (sha256:...), verified on every restore and "
                   "by the periodic check", nullable=True),
    "status": string("active; archived (set aside by an operator); corrupt (its snapshot "
                     "no longer matches its hash: rollback_to refuses it, E1624)",
                     enum=("active", "archived", "corrupt")),
    "tags": string_list(),
    "agentId": string("The agent that made it", nullable=True),
}, ["checkpointId", "label", "scope", "includedTasks", "createdAt", "size"],
    description="A checkpoint, without its snapshot")


def _list_checkpoints(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    # A task or session names its project (the access check let it through); otherwise
    # the caller's projects, as every listing.
    named = args.get("taskId") or args.get("sessionId")
    projects = ([args["projectId"]] if args.get("projectId") else
                (None if ctx.projects is None else sorted(ctx.projects)) if named else
                ctx.visible_projects())
    return checkpoint_list.list_checkpoints(
        task_id=args.get("taskId"), session_id=args.get("sessionId"), label=args.get("label"),
        limit=args.get("limit", checkpoint_list.LIST_LIMIT_DEFAULT),
        offset=args.get("offset", 0), project_ids=projects)


register(Tool(
    name="list_checkpoints",
    description=(
        "Find checkpoints to roll back to, newest first, with the total: of a "
        "task (taskId: its own and those including it), made in a session (sessionId), "
        "with a label (exact), in a project (projectId; default: the caller's projects). "
        "latest is the newest match whatever the page: with sessionId, the session's last "
        "checkpoint, the checkpointId rollback_to needs after a crash. Each has its size, "
        "hash, status (active, archived, corrupt: a corrupt one cannot be restored), tags "
        "and agent. E1610 unknown task, E1600 unknown session."
    ),
    input_schema=obj({
        "taskId": safe_id("Only checkpoints of this task"),
        "sessionId": safe_id("Only checkpoints made in this session"),
        "label": string("Only checkpoints with exactly this label", min_length=1,
                        max_length=500),
        "projectId": project_id("Only this project's checkpoints"),
        "limit": integer("Page size", minimum=1, maximum=checkpoint_list.LIST_LIMIT_MAX,
                         default=checkpoint_list.LIST_LIMIT_DEFAULT),
        "offset": integer("Checkpoints to skip", minimum=0, default=0),
    }),
    output_schema=obj({
        "checkpoints": array(LISTED_CHECKPOINT), "total": integer(minimum=0),
        "limit": integer(), "offset": integer(),
        "latest": {"anyOf": [LISTED_CHECKPOINT, {"type": "null"}],
                   "description": "The newest matching checkpoint, whatever the page"},
        "timestamp": TIMESTAMP,
    }, ["checkpoints", "total", "latest"]),
    handler=_list_checkpoints,
    read_only=True,
))


def _rollback(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    target = args["target"]
    return rollback.rollback_to(
        args["taskId"], target["type"], version=target.get("version"),
        checkpoint_id=target.get("checkpointId"),
        create_backup=args.get("createBackup", True), session_id=args.get("sessionId"),
        actor=_actor(ctx))


register(Tool(
    name="rollback_to",
    description=(
        "Restore every content field of a task from a version or a checkpoint (spec "
        "4.1.4). A backup checkpoint is made first (createBackup, default true). The "
        "restore is itself a new version, so it can be rolled back too. E1610, E1622, "
        "E1623, E1624 (corrupt checkpoint, checkpoint without this task, or a database "
        "failure: 503 while Postgres is unreachable, details.cause E1654). " + LOCK_RULE
    ),
    input_schema=obj({
        "taskId": safe_id("Task to roll back"),
        "target": obj({"type": string(enum=("version", "checkpoint")),
                       "version": integer(minimum=1),
                       "checkpointId": string(min_length=1, max_length=255)}, ["type"]),
        "createBackup": boolean(default=True),
        "sessionId": SESSION_ID,
    }, ["taskId", "target"]),
    output_schema=obj({
        "success": boolean(), "taskId": string(),
        "rolledBackTo": obj({"type": string(), "identifier": {"type": ["string", "integer"]}}),
        "backupCheckpointId": string(),
        "restoredState": obj({"currentPhase": string(nullable=True),
                              "iteration": {"type": ["integer", "null"]},
                              "status": string(nullable=True)}),
        "version": integer(), "savedTo": SAVED_TO, "timestamp": TIMESTAMP,
    }, ["success", "taskId", "rolledBackTo", "restoredState", "timestamp"]),
    handler=_rollback,
    database_code="E1624",
))


register(Tool(
    name="switch_task",
    description=(
        "Atomically save the current task (with currentTaskUpdates), make toTaskId the "
        "active task of its project and stamp its last_session_at, in one transaction (the "
        "two tasks must be of one project: E1607 otherwise); then refresh the "
        "hot context in Redis and files. blockedBy lists unfinished "
        "tasks that block the new task. E1660, E1661, E1662, E1612; E1633 when sessionId "
        "is paused (pause_session: a paused session takes no new task; its own saves still "
        "work); on failure nothing changed."
    ),
    input_schema=obj({
        "fromTaskId": safe_id("Current task; omit if just loading"),
        "toTaskId": safe_id("Task to switch to"),
        "saveCurrentState": boolean(default=True),
        "currentTaskUpdates": obj({k: TASK_FIELDS[k] for k in
                                   ("immediateContext", "currentPhase", "iteration")}),
        "sessionId": SESSION_ID,
    }, ["toTaskId"]),
    output_schema=obj({
        "success": boolean(),
        "previousTask": obj({"taskId": string(), "saved": boolean(), "version": integer()}),
        "newTask": obj({"taskId": string(), "name": string(), "status": string(nullable=True),
                        "currentPhase": string(nullable=True),
                        "iteration": {"type": ["integer", "null"]},
                        "immediateContext": {"type": "object"}, "keyFiles": string_list(),
                        "resumePrompt": string(nullable=True),
                        "blockedBy": array(obj({"taskId": string(), "name": string()},
                                               additional=True))}, additional=True),
        "timestamp": TIMESTAMP,
    }, ["success", "newTask", "timestamp"]),
    handler=lambda args, ctx: switch.switch_task(
        args["toTaskId"], from_task_id=args.get("fromTaskId"),
        save_current_state=args.get("saveCurrentState", True),
        current_task_updates=args.get("currentTaskUpdates"),
        session_id=args.get("sessionId"), actor=_actor(ctx)),
))


register(Tool(
    name="sync_hot_context",
    description=(
        "Rewrite the Redis cache (task keys, hot context) and the file backups (task "
        "files, _registry.json, _hot_context.json, shared/project-constants.json) from "
        "Postgres. Without taskIds: every pending, in-progress or blocked "
        "task of the caller's projects (projectId: of that one). If a target fails, the "
        "answer (synced, errors) is the details of E1650 (only Redis failed), E1651 (only "
        "file writes failed) or E1653 (both)."
    ),
    input_schema=obj({
        "syncRedis": boolean(default=True),
        "syncFiles": boolean(default=True),
        "taskIds": array(safe_id("Task id"), max_items=10000),
        "projectId": project_id("Only this project"),
        "updateRegistry": boolean(default=True),
    }),
    output_schema=obj({
        "success": boolean(),
        "synced": obj({
            "redis": obj({"hotContext": boolean(), "taskContexts": integer()}),
            "files": obj({"registry": boolean(), "taskContexts": integer(),
                          "hotContext": boolean()}),
        }),
        "errors": string_list(),
        "timestamp": TIMESTAMP,
    }, ["success", "synced", "errors", "timestamp"]),
    handler=lambda args, ctx: sync.sync_hot_context(
        sync_redis=args.get("syncRedis", True), sync_files=args.get("syncFiles", True),
        task_ids=args.get("taskIds"), update_registry=args.get("updateRegistry", True),
        project_ids=ctx.visible_projects(args.get("projectId")), progress=ctx.progress),
    task_group=("taskIds",),
))


STRING_MAP = {"type": "object", "additionalProperties": {"type": "string", "maxLength": 1000},
              "maxProperties": 200}
GLOBAL_FIELDS = {
    "projectName": string("Display name", min_length=1, max_length=500),
    "description": string(max_length=20000, nullable=True),
    "hardRules": string_list("Rules every agent must follow", max_items=200, max_length=2000),
    "techStack": string_list("Technologies of the project", max_items=200, max_length=200),
    "keyPaths": {**STRING_MAP, "description": "{name: path}"},
    "services": {**STRING_MAP, "description": "{service: host:port}"},
    "orchestratorContext": {"type": "object", "description": (
        "Free-form orchestrator state. Its fileClaims key is the project's edit policy: "
        "{policy: warn|block, ignore: [glob, ...]} (what an agent about to edit a file "
        "another task's live session holds is told, or whether the edit is refused)")},
}
# What a change of the global context answers: by a save and by a rollback alike.
GLOBAL_WRITE_ANSWER = obj({
    "success": boolean(), "projectId": string(), "version": integer(),
    "changed": string_list("Fields whose value changed"),
    "global": obj(GLOBAL_FIELDS),
    "savedTo": obj({"database": boolean(), "file": boolean()}, ["database", "file"]),
    "timestamp": TIMESTAMP,
}, ["success", "projectId", "version", "changed", "global", "savedTo", "timestamp"])

register(Tool(
    name="update_global_context",
    description=(
        "Change a project's global context (projectId, default the caller's "
        "project), the part every agent of the project reads first: projectName, "
        "description, hardRules, techStack, keyPaths, services, orchestratorContext. "
        "Listed fields are replaced whole (send the full list or map). "
        "The database records each change as a new version (history in "
        "global_context_versions, diff and rollback in the admin); an unchanged value makes "
        "no version. E1611 without the project row, E1612 for invalid fields."
    ),
    input_schema=obj({
        "projectId": project_id(),
        **GLOBAL_FIELDS,
        "changeSummary": string(max_length=2000, nullable=True),
        "sessionId": SESSION_ID,
    }),
    output_schema=GLOBAL_WRITE_ANSWER,
    handler=lambda args, ctx: global_context.update_global_context(
        args.get("projectId") or ctx.default_project(),
        {k: v for k, v in args.items() if k in GLOBAL_FIELDS},
        change_summary=args.get("changeSummary"), session_id=args.get("sessionId"),
        actor=_actor(ctx)),
))


register(Tool(
    name="rollback_global_context",
    description=(
        "Restore the editable fields of the global context from one of its versions (the "
        "console's rollback); the restore is itself a new version. E1623 unknown version, "
        "E1624 unreadable."
    ),
    input_schema=obj({"version": integer(minimum=1), "projectId": project_id(),
                      "sessionId": SESSION_ID}, ["version"]),
    output_schema=GLOBAL_WRITE_ANSWER,
    handler=lambda args, ctx: global_context.rollback_global_context(
        args.get("projectId") or ctx.default_project(), args["version"], actor=_actor(ctx),
        session_id=args.get("sessionId")),
    internal=True,
))


# -- projects ------------------------------------------------------------------------------

PROJECT = obj({"projectId": string(), "name": string(), "createdAt": TIMESTAMP,
               "tasks": integer(), "liveSessions": integer(),
               "activeTaskId": string(nullable=True)},
              ["projectId", "name", "createdAt"], description="A project")

register(Tool(
    name="create_project",
    description=(
        "Create a project: one repository (or body of work) this server coordinates, with "
        "an empty global context. Its tasks, sessions, conflicts, locks and handoffs never "
        "mix with another project's. projectId: letters, digits, . _ : - (at most 200). "
        "E1606 when it exists."
    ),
    input_schema=obj({"projectId": project_id("The new project's id"),
                      "name": string("Display name", min_length=1, max_length=500),
                      "description": string(max_length=20000, nullable=True)},
                     ["projectId", "name"]),
    output_schema=obj({"success": boolean(), "projectId": string(), "name": string(),
                       "createdAt": TIMESTAMP, "timestamp": TIMESTAMP},
                      ["success", "projectId", "name", "createdAt"]),
    handler=lambda args, ctx: projects.create_project(
        args["projectId"], args["name"], description=args.get("description")),
))

register(Tool(
    name="list_projects",
    description=(
        "The projects the caller may reach, by id, with their task count, live sessions "
        "and active task."
    ),
    input_schema=obj({}),
    output_schema=obj({"projects": array(PROJECT), "total": integer(), "timestamp": TIMESTAMP},
                      ["projects", "total"]),
    handler=lambda args, ctx: projects.list_projects(ctx.visible_projects()),
    read_only=True,
))


# -- critical context keys (kept whole in every bundle) -----------------------------------

register(Tool(
    name="mark_critical",
    description=(
        "Mark context keys of a task critical (critical=false: unmark them): the task's "
        "context bundle (get_context_bundle, start_session, report_compaction) then keeps "
        "them in HOT, never dropped nor cut whatever the budget, like the project's hard "
        "rules. Keys: " + ", ".join(critical.MOVABLE) + " (WARM or COLD otherwise); "
        + ", ".join(critical.ALWAYS_HOT) + " are always in HOT. The answer lists every key "
        "now marked. E1610 unknown task."
    ),
    input_schema=obj({
        "taskId": safe_id("Task whose keys to mark"),
        "keys": {**array(string(enum=critical.KEYS), "Context keys to (un)mark",
                         max_items=len(critical.KEYS)), "minItems": 1},
        "critical": boolean("false: unmark the keys", default=True),
    }, ["taskId", "keys"]),
    output_schema=obj({"success": boolean(), "taskId": string(),
                       "criticalKeys": string_list("Every key of the task now marked"),
                       "timestamp": TIMESTAMP},
                      ["success", "taskId", "criticalKeys", "timestamp"]),
    handler=lambda args, ctx: critical.mark_critical(
        args["taskId"], args["keys"], critical=args.get("critical", True), actor=_actor(ctx)),
))


register(Tool(
    name="check_checkpoints",
    description=(
        "Verify every checkpoint's snapshot against its hash: one that no "
        "longer matches is marked corrupt (shown on the console, refused by rollback_to), "
        "one that verifies again goes back to active. Beat runs it every "
        "CHECKPOINT_CHECK_INTERVAL_SECONDS; manage.py check_checkpoints runs it once."
    ),
    input_schema=obj({}),
    output_schema=obj({
        "success": boolean(), "checked": integer(minimum=0),
        "corrupt": string_list("Every corrupt checkpoint", max_items=10 ** 9),
        "newlyCorrupt": string_list("Those found corrupt in this run", max_items=10 ** 9),
        "repaired": string_list("Corrupt ones that verified again", max_items=10 ** 9),
        "timestamp": TIMESTAMP,
    }, ["success", "checked", "corrupt", "newlyCorrupt", "repaired", "timestamp"]),
    handler=lambda args, ctx: checkpoint_check.check_checkpoints(),
    internal=True,
))


register(Tool(
    name="archive_checkpoints",
    description=(
        "Set checkpoints aside (archived: true; still listed and restorable, status "
        "archived) or make them active again (archived: false); the console's actions. A "
        "corrupt checkpoint stays corrupt. E1622 unknown checkpoint (nothing changes)."
    ),
    input_schema=obj({
        "checkpointIds": {**array(string(min_length=1, max_length=255), max_items=1000),
                          "minItems": 1},
        "archived": boolean(default=True),
    }, ["checkpointIds"]),
    output_schema=obj({
        "success": boolean(),
        "statuses": {"type": "object", "additionalProperties": string(
            enum=("active", "archived", "corrupt"))},
        "timestamp": TIMESTAMP,
    }, ["success", "statuses", "timestamp"]),
    handler=lambda args, ctx: checkpoint_check.archive_checkpoints(
        args["checkpointIds"], args.get("archived", True)),
    internal=True,
))


# -- what a project-limited token may name (foundation.core.tools.access) ----------------
# Tasks and checkpoints live in a project; these tools' arguments name them, and a call
# naming one of another project gets the answer these tools give for a missing one.
def _register_project_entities() -> None:
    from foundation.core.db import qualified
    from foundation.core.errors import checkpoint_not_found, task_not_found
    from foundation.core.tools.access import register_argument, register_entity

    register_entity("task", f"SELECT task_id, project_id FROM {qualified('task_contexts')} "
                    "WHERE task_id = ANY(%s)")
    register_entity("checkpoint", f"SELECT checkpoint_id, project_id FROM "
                    f"{qualified('checkpoints')} WHERE checkpoint_id = ANY(%s)")
    for name in ("taskId", "taskIds", "includeTasks"):
        register_argument(name, "task", task_not_found)
    # switch_task's own codes, the id under the field it came in.
    register_argument("fromTaskId", "task",
                      lambda item: task_not_found(item, code="E1660", field="fromTaskId"))
    register_argument("toTaskId", "task",
                      lambda item: task_not_found(item, code="E1661", field="toTaskId"))
    register_argument("target.checkpointId", "checkpoint", checkpoint_not_found)


_register_project_entities()
