"""Session tools: lifecycle (spec 1.2, CONTRACT.md), check_recovery (4.1.8), compaction
(7.1.2, seed 004), the event log and scratchpad (seed 002)."""

from __future__ import annotations

from typing import Any

from orchestrator.tools import Tool, ToolContext, register
from orchestrator.tools.access import record_session_owner, session_argument
from orchestrator.tools.schema import (
    RECOVERY_TYPES,
    SESSION_STATUSES,
    TIMESTAMP,
    any_value,
    array,
    boolean,
    integer,
    number,
    obj,
    safe_id,
    string,
    string_list,
)
from sessions.models import EVENT_ROLES, EVENT_TYPES
from sessions.services import compaction, events, lifecycle, recovery

SESSION_ID = safe_id("Session id (letters, digits, . _ : -)")
TASK_ID = safe_id("Task the session works on")
NOTIFICATION_STATUS = string("Slack notification outcome; never fails the call",
                             enum=("sent", "skipped", "failed"))
SAVED_TO = obj({"database": boolean(), "redis": boolean(), "file": boolean()},
               ["database", "redis", "file"])
UNSAVED_CHANGES = array(
    obj({"type": string(max_length=100, min_length=1), "path": string(max_length=1000),
         "description": string(max_length=5000)}, ["type", "path"]),
    "Changes not yet saved anywhere (spec 4.1.8)", max_items=500)
TOOL_USE = obj({"timestamp": TIMESTAMP, "tool": string(), "success": boolean()},
               ["timestamp", "tool", "success"])
HANDOFF = {"type": ["object", "null"], "properties": {
    "handoffId": string(), "projectDir": string(), "fromSessionId": string(),
    "fromAgent": string(nullable=True), "summary": string(), "openItems": string_list(),
    "createdAt": TIMESTAMP, "consumedAt": string(nullable=True), "active": boolean()}}
RECOVERY_SESSION = obj({
    "sessionId": string(), "taskId": string(nullable=True), "taskName": string(nullable=True),
    "recoveryType": string(enum=RECOVERY_TYPES), "lastActivity": string(nullable=True),
    "resumePrompt": string("Markdown, spec 4.1.8 format"),
    "toolHistory": array(TOOL_USE, "Last 10 tool uses, newest first (includeHistory)"),
    "unsavedChanges": UNSAVED_CHANGES, "compactionCount": integer(),
    "fullReloadDue": boolean()},
    ["sessionId", "recoveryType", "lastActivity", "resumePrompt", "unsavedChanges"])
RECOVERY_REPORT = obj({
    "needsRecovery": boolean(), "sessions": array(RECOVERY_SESSION), "summary": string(),
    "timestamp": TIMESTAMP,
    "markedRecovered": obj({"sessionId": string(), "status": string()})},
    ["needsRecovery", "sessions", "summary", "timestamp"])


def _start(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    result = lifecycle.start_session(args)
    record_session_owner(result["sessionId"], ctx)
    return result


register(Tool(
    name="start_session",
    description=(
        "Register an agent session (id generated as session-<ms>-<uuid4> when omitted; an "
        "existing id is E1601). The answer carries the project's handoff note left by the "
        "previous session (now consumed), what check_recovery reports for the same project, "
        "and notificationStatus."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "taskId": TASK_ID,
                      "projectDir": string(max_length=1000), "gitBranch": string(max_length=255),
                      "agentId": string(max_length=255),
                      "processId": integer("Agent process id (crash detection, 8.1.2)",
                                           minimum=0)}),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": string(enum=SESSION_STATUSES), "startedAt": TIMESTAMP,
                       "taskId": string(nullable=True), "projectDir": string(nullable=True),
                       "gitBranch": string(nullable=True), "agentId": string(nullable=True),
                       "processId": {"type": ["integer", "null"]},
                       "heartbeatIntervalMs": integer(), "handoff": HANDOFF,
                       "recovery": RECOVERY_REPORT, "savedTo": SAVED_TO,
                       "notificationStatus": NOTIFICATION_STATUS},
                      ["success", "sessionId", "status", "startedAt", "notificationStatus"]),
    handler=_start,
))


def _heartbeat(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return lifecycle.heartbeat(args)


register(Tool(
    name="heartbeat",
    description=(
        "Mark a session alive (Postgres, Redis context:heartbeat:{sessionId} with a 120 s "
        "TTL, RECOVERY_DIR/.session-heartbeat.json), optionally with the conversation summary "
        "and unsaved changes. Never creates a context version. Ended session: E1602; "
        "crashed: E1603 (go through check_recovery); unknown: E1600."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "taskId": TASK_ID,
                      "conversationSummary": string(max_length=50000),
                      "unsavedChanges": UNSAVED_CHANGES}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": string(enum=SESSION_STATUSES), "lastHeartbeat": TIMESTAMP,
                       "taskId": string(nullable=True), "nextHeartbeatMs": integer(),
                       "savedTo": SAVED_TO}, ["success", "sessionId", "lastHeartbeat"]),
    handler=_heartbeat,
    writes_session=session_argument,
))


def _end(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return lifecycle.end_session(args)


register(Tool(
    name="end_session",
    description=(
        "End a session. With a summary and/or openItems it leaves the project's handoff "
        "note for the next session (replacing the previous one: one active per project). "
        "Unknown session: E1600; already ended: E1602; crashed: E1603."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "summary": string(max_length=20000),
                      "openItems": string_list("Open items for the next session", max_items=100),
                      "agentId": string(max_length=255)}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(), "status": {"const": "ended"},
                       "endedAt": TIMESTAMP, "durationSeconds": number(nullable=True),
                       "taskId": string(nullable=True), "tasksWorked": integer(),
                       "handoff": HANDOFF, "notificationStatus": NOTIFICATION_STATUS},
                      ["success", "sessionId", "status", "endedAt", "notificationStatus"]),
    handler=_end,
    writes_session=session_argument,
))


def _check_recovery(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return recovery.check_recovery(mark_recovered_id=args.get("markRecovered"),
                                   include_history=args.get("includeHistory", False),
                                   project_dir=args.get("projectDir"))


register(Tool(
    name="check_recovery",
    description=(
        "Sessions needing recovery after a crash or compaction (database flag, stale heartbeats"
        " in the database and the heartbeat file), each with a markdown resume prompt. "
        "markRecovered marks one recovered first (E1631 unknown, E1632 nothing to recover)."
    ),
    input_schema=obj({"markRecovered": SESSION_ID,
                      "includeHistory": boolean("Add the last 10 tool uses", default=False),
                      "projectDir": string("Only sessions of this project", max_length=1000)}),
    output_schema=RECOVERY_REPORT,
    handler=_check_recovery,
    writes_session=lambda args: args.get("markRecovered"),
    validation_code="E1612",
))


def _report_compaction(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return compaction.report_compaction(
        args["sessionId"], trigger=args.get("trigger", "auto"),
        conversation_summary=args.get("conversationSummary"),
        unsaved_changes=args.get("unsavedChanges"),
        context_remaining=args.get("contextRemaining"))


register(Tool(
    name="report_compaction",
    description=(
        "Report that the session's context window was compacted (manual or auto). Records a "
        "recovery record (type 'compaction': task state, summary, unsaved changes, tool "
        "history), counts compactions and returns the resume prompt; every second compaction "
        "needs a full plan reload (fullReloadDue)."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "trigger": string(enum=("manual", "auto")),
                      "conversationSummary": string(max_length=50000),
                      "unsavedChanges": UNSAVED_CHANGES,
                      "contextRemaining": number("Share of the window left, 0-1", minimum=0,
                                                 maximum=1)}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": {"const": "compacted"}, "recoveryType": {"const": "compaction"},
                       "compactionNumber": integer(), "fullReloadDue": boolean(),
                       "resumePrompt": string(), "timestamp": TIMESTAMP},
                      ["success", "sessionId", "compactionNumber", "fullReloadDue",
                       "resumePrompt"]),
    handler=_report_compaction,
    writes_session=session_argument,
))

EVENT = obj({"sequence": integer(), "type": string(enum=EVENT_TYPES),
             "role": string(enum=EVENT_ROLES), "content": string(), "parts": any_value(),
             "createdAt": TIMESTAMP})


def _append(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return events.append_event(args["sessionId"], args["type"], args["role"], args["content"],
                               args.get("parts"))


register(Tool(
    name="append_session_event",
    description=(
        "Append an immutable event to the session's log with the next sequence number "
        "(1, 2, 3, ... per session). Ended session: E1602."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "type": string(enum=EVENT_TYPES),
                      "role": string(enum=EVENT_ROLES), "content": string(max_length=200000),
                      "parts": any_value("Structured data (JSON)")},
                     ["sessionId", "type", "role", "content"]),
    output_schema=obj({"success": boolean(), "sessionId": string(), "eventId": integer(),
                       "sequence": integer(), "type": string(), "role": string(),
                       "createdAt": TIMESTAMP}, ["success", "sessionId", "sequence"]),
    handler=_append,
    writes_session=session_argument,
))


def _recent(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return events.recent_events(args["sessionId"], max_turns=args.get("maxTurns", 30),
                                max_tokens=args.get("maxTokens"))


register(Tool(
    name="get_recent_session_events",
    description=(
        "The session's latest events in order: the last maxTurns turns (a turn starts at a "
        "user_message), trimmed from the oldest to fit maxTokens (about JSON length / 4)."
    ),
    input_schema=obj({"sessionId": SESSION_ID,
                      "maxTurns": integer(minimum=1, maximum=1000, default=30),
                      "maxTokens": integer(minimum=1)}, ["sessionId"]),
    output_schema=obj({"sessionId": string(), "events": array(EVENT), "count": integer(),
                       "estimatedTokens": integer(), "truncated": boolean()},
                      ["sessionId", "events", "count"]),
    handler=_recent,
    read_only=True,
))

SCRATCHPAD = obj({"sessionId": string(), "scratchpad": {"type": "object"},
                  "updatedAt": string(nullable=True), "success": boolean()},
                 ["sessionId", "scratchpad"])


def _get_scratchpad(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return events.get_scratchpad(args["sessionId"])


register(Tool(
    name="get_session_scratchpad",
    description="The session's mutable scratchpad (working memory, seed 002).",
    input_schema=obj({"sessionId": SESSION_ID}, ["sessionId"]),
    output_schema=SCRATCHPAD,
    handler=_get_scratchpad,
    read_only=True,
))


def _update_scratchpad(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return events.update_scratchpad(args["sessionId"], args["patch"])


register(Tool(
    name="update_session_scratchpad",
    description=(
        "Merge a JSON merge patch (RFC 7396) into the session's scratchpad: objects merge, "
        "a null value deletes its key. Concurrent updates never lose each other."
    ),
    input_schema=obj({"sessionId": SESSION_ID,
                      "patch": {"type": "object", "description": "JSON merge patch"}},
                     ["sessionId", "patch"]),
    output_schema=SCRATCHPAD,
    handler=_update_scratchpad,
    writes_session=session_argument,
))
