"""Session tools: lifecycle, check_recovery, compaction, pauses, the event log and
scratchpad."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone

from contexts.services import bundle
from contexts.services import learnings as project_learnings
from foundation.core.stamps import now_iso
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.access import (
    remember_session_owner,
    session_owner,
)
from foundation.core.tools.schema import (
    RECOVERY_TYPES,
    SESSION_STATUSES,
    TIMESTAMP,
    any_value,
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
from sessions.models import EVENT_ROLES, EVENT_TYPES
from sessions.services import (
    active,
    activity,
    agent_context,
    compaction,
    events,
    lifecycle,
    pause,
    recovery,
)

SESSION_ID = safe_id("Session id (letters, digits, . _ : -)")
# What runs a session and for what (start_session; get_active_session finds it by them).
AGENT_KIND = string("Kind of agent: claude-code, codex, gemini, other, ... (free text, "
                    "letters, digits, . _ -)", min_length=1, max_length=64,
                    pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
WORKFLOW = string("Workflow the session runs (e.g. create-service)", min_length=1,
                  max_length=200)
SKILL = string("Skill the session uses (e.g. backend-service-builder)", min_length=1,
               max_length=200)
METADATA = {"type": "object", "maxProperties": 50,
            "description": "Small free-form object (at most 50 keys, 4,096 bytes of JSON)"}
TASK_ID = safe_id("Task the session works on")
NOTIFICATION_STATUS = string("Slack notification: sent (handed to the worker, which posts it "
                             "with retries), skipped (no webhook) or failed (could not be handed "
                             "over); never fails the call", enum=("sent", "skipped", "failed"))
CRASHED_SESSIONS = array(
    SESSION_ID, "Sessions whose agent process the caller saw exit without ending them (a "
    "hook finding the process gone): marked crashed now, not CRASH_THRESHOLD_MINUTES later; "
    "sessions that are not live are left as they are", max_items=50)
SAVED_TO = obj({"database": boolean(), "redis": boolean(), "file": boolean()},
               ["database", "redis", "file"])
UNSAVED_CHANGES = array(
    obj({"type": string(max_length=100, min_length=1), "path": string(max_length=1000),
         "description": string(max_length=5000)}, ["type", "path"]),
    "Changes not yet saved anywhere", max_items=500)
TOOL_USE = obj({"timestamp": TIMESTAMP, "tool": string(), "success": boolean(),
                "summary": string("What a hook-reported tool use did")},
               ["timestamp", "tool", "success"])
HANDOFF = {"type": ["object", "null"], "properties": {
    "handoffId": string(), "projectId": string(),
    "projectDir": string("Directory of the session that left it", nullable=True),
    "fromSessionId": string(),
    "fromAgent": string(nullable=True), "summary": string(), "openItems": string_list(),
    "createdAt": TIMESTAMP,
    "consumedAt": string("First read by a starting session", nullable=True),
    "consumedBySessionId": string(nullable=True),
    "lastConfirmedAt": string("Latest read by a starting session", nullable=True),
    "active": boolean("True until the next end_session of the project replaces it")}}
ORPHANED_TASK = obj({"taskId": string(), "name": string(), "crashedSessionId": string(),
                     "lastActivity": string(nullable=True)},
                    ["taskId", "name", "crashedSessionId", "lastActivity"],
                    description="Orphaned work: an unfinished task a crashed session "
                                "worked on and no live session works on")
BUDGET_TOKENS = integer("Token budget of the context bundle (tokens ~ characters / 4); "
                        "0 = no bundle", minimum=0, maximum=bundle.MAX_BUDGET_TOKENS)
TIER = string(enum=bundle.TIERS)
CONTEXT_BUNDLE = obj({
    "taskId": string(), "budgetTokens": integer(),
    "estimatedTokens": integer("ceil(characters of text / 4)"),
    "tiers": array(TIER, "Tiers in the text, hot first"),
    "droppedTiers": array(TIER, "Tiers left out to fit the budget (cold goes first)"),
    "overBudget": boolean("HOT alone (with the hard rules and the critical keys, never "
                          "cut) is over the budget: the text is whole and longer"),
    "criticalKeys": string_list("The task's keys marked critical (mark_critical): in HOT"),
    "truncated": boolean("Always false: nothing is cut inside a tier (kept for older "
                         "clients; see overBudget)"),
    "text": string("Markdown ready to inject")},
    ["taskId", "budgetTokens", "estimatedTokens", "tiers", "droppedTiers", "truncated", "text"],
    description="A task's context bundle in three tiers (HOT, WARM, COLD)")
PAUSE_REASONS = pause.PAUSE_REASONS
PAUSE = obj({"reason": string(enum=PAUSE_REASONS), "pausedAt": string(nullable=True),
             "resetsAt": string(nullable=True),
             "remainingPercent": number(nullable=True),
             "resumeAt": string("resetsAt + PAUSE_RESUME_GRACE_MINUTES", nullable=True)},
            ["reason", "pausedAt", "resetsAt"],
            description="The pause of a session still paused after its reset time")
RECONCILED_EVENT = obj({"sequence": integer(), "type": string(enum=EVENT_TYPES),
                        "event": string("parts.event of a system event", nullable=True),
                        "content": string("First 500 characters"),
                        "taskId": string(nullable=True), "createdAt": TIMESTAMP},
                       ["sequence", "type", "content", "createdAt"])
RECOVERY_SESSION = obj({
    "sessionId": string(), "taskId": string(nullable=True), "taskName": string(nullable=True),
    "recoveryType": string(enum=RECOVERY_TYPES), "lastActivity": string(nullable=True),
    "resumePrompt": string("Markdown: what the session was doing and how to carry on"),
    "toolHistory": array(TOOL_USE, "Last 10 tool uses, newest first (includeHistory)"),
    "unsavedChanges": UNSAVED_CHANGES, "compactionCount": integer(),
    "fullReloadDue": boolean(),
    "savedStateAt": string("When the session's last saved state was written (the "
                           "newest version of its task); null: none", nullable=True),
    "eventsSinceSavedState": integer("Events the session wrote after its last saved state"),
    "stateReconciled": array(RECONCILED_EVENT, "state_reconciled: the newest 20 "
                             "of those events, oldest first, to apply to the saved state"),
    "pause": PAUSE},
    ["sessionId", "recoveryType", "lastActivity", "resumePrompt", "unsavedChanges"])
RECENT_COMPLETION = obj({"taskId": string(), "name": string(), "projectId": string(),
                         "completedAt": string(nullable=True)},
                        ["taskId", "name", "completedAt"])
RECOVERY_REPORT = obj({
    "needsRecovery": boolean(), "sessions": array(RECOVERY_SESSION), "summary": string(),
    "timestamp": TIMESTAMP, "orphanedTasks": array(ORPHANED_TASK),
    "recentCompletions": array(RECENT_COMPLETION, "Tasks completed within "
                               "RECENT_COMPLETION_WINDOW hours, newest first, to validate "
                               "before new work"),
    "recentCompletionWindowHours": number(),
    "markedRecovered": obj({"sessionId": string(), "status": string()})},
    ["needsRecovery", "sessions", "summary", "timestamp"])


def _start(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    project = args.get("projectId") or (None if args.get("taskId") else ctx.default_project())
    owner = session_owner(ctx)
    result = lifecycle.start_session(
        session_id=args.get("sessionId"), task_id=args.get("taskId"), project_id=project,
        project_dir=args.get("projectDir"), git_branch=args.get("gitBranch"),
        agent_id=args.get("agentId"), process_id=args.get("processId"),
        resolve_task=args.get("resolveTask", False), create_task=args.get("createTask", False),
        previous_session_id=args.get("previousSessionId"),
        context_budget_tokens=args.get("contextBudgetTokens"),
        crashed_session_ids=args.get("crashedSessionIds"), owner=owner,
        agent_kind=args.get("agentKind"), workflow=args.get("workflow"),
        skill=args.get("skill"), metadata=args.get("metadata"))
    remember_session_owner(result["sessionId"], owner)
    return result


register(Tool(
    name="start_session",
    description=(
        "Register an agent session in a project (the task's; without a task projectId, "
        "default the caller's project; a task of another project than projectId is E1607). "
        "Id generated as session-<ms>-<uuid4> when omitted; an existing id is E1601. The "
        "answer carries the project's handoff note left by the last end_session (it stays "
        "active for parallel sessions until the next end_session replaces it), what "
        "check_recovery reports for the project (crashed sessions with resume prompts, "
        "orphaned tasks) and notificationStatus. resolveTask picks a task when none is "
        "given (taskSource: branch = the task of the latest session of this projectDir and "
        "gitBranch; with createTask, branchTask = the project's task of this gitBranch; "
        "active = the project's active task; with createTask, created = a new task for "
        "the branch, id <project>-<branch>, or without gitBranch for projectDir). "
        "previousSessionId (a resumed conversation) hands over that session's own note. "
        "contextBudgetTokens > 0 adds the task's tiered contextBundle (its WARM tier "
        "carries the project's newest learnings). agentKind, workflow, skill and metadata "
        "are recorded with the session: get_active_session finds it by them; "
        "metadata over 4,096 bytes of JSON is E1612."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "taskId": TASK_ID, "projectId": project_id(),
                      "projectDir": string(max_length=1000), "gitBranch": string(max_length=255),
                      "agentId": string(max_length=255),
                      "agentKind": AGENT_KIND, "workflow": WORKFLOW, "skill": SKILL,
                      "metadata": METADATA,
                      "processId": integer("Agent process id (crash detection)",
                                           minimum=0),
                      "resolveTask": boolean("Without taskId, pick the task from the branch "
                                             "or the global active task", default=False),
                      "createTask": boolean("With resolveTask: when no task is found, make "
                                            "the branch's (or directory's) task",
                                            default=False),
                      "previousSessionId": safe_id("The session this conversation resumes: "
                                                   "its handoff note is handed over"),
                      "contextBudgetTokens": BUDGET_TOKENS,
                      "crashedSessionIds": CRASHED_SESSIONS}),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": string(enum=SESSION_STATUSES), "startedAt": TIMESTAMP,
                       "taskId": string(nullable=True),
                       "taskSource": string("Where taskId came from", nullable=True,
                                            enum=("argument", "branch", "branchTask",
                                                  "active", "created")),
                       "projectId": string(), "projectDir": string(nullable=True),
                       "gitBranch": string(nullable=True), "agentId": string(nullable=True),
                       "agentKind": string(nullable=True), "workflow": string(nullable=True),
                       "skill": string(nullable=True), "metadata": {"type": "object"},
                       "processId": {"type": ["integer", "null"]},
                       "heartbeatIntervalMs": integer(), "handoff": HANDOFF,
                       "contextBundle": CONTEXT_BUNDLE,
                       "recovery": RECOVERY_REPORT, "savedTo": SAVED_TO,
                       "notificationStatus": NOTIFICATION_STATUS},
                      ["success", "sessionId", "status", "startedAt", "notificationStatus"]),
    handler=_start,
    creates=frozenset({"sessionId"}),
))


def _heartbeat(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return lifecycle.heartbeat(args["sessionId"], task_id=args.get("taskId"),
                               conversation_summary=args.get("conversationSummary"),
                               unsaved_changes=args.get("unsavedChanges"))


register(Tool(
    name="heartbeat",
    description=(
        "Mark a session alive (Postgres, Redis context:heartbeat:{sessionId} with a 120 s "
        "TTL, RECOVERY_DIR/.session-heartbeat.json), optionally with the conversation summary "
        "and unsaved changes. Never creates a context version. A paused session takes "
        "heartbeats and stays paused (paused: true). Ended session: E1602; "
        "crashed: E1603 (go through check_recovery); unknown: E1600."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "taskId": TASK_ID,
                      "conversationSummary": string(max_length=50000),
                      "unsavedChanges": UNSAVED_CHANGES}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": string(enum=SESSION_STATUSES), "lastHeartbeat": TIMESTAMP,
                       "taskId": string(nullable=True), "nextHeartbeatMs": integer(),
                       "savedTo": SAVED_TO,
                       "paused": boolean("The session is paused (pause_session); a "
                                         "heartbeat leaves the pause as it is")},
                      ["success", "sessionId", "lastHeartbeat"]),
    handler=_heartbeat,
))


def _end(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return lifecycle.end_session(args["sessionId"], summary=args.get("summary"),
                                 open_items=args.get("openItems"), agent_id=args.get("agentId"),
                                 learnings=args.get("learnings"))


register(Tool(
    name="end_session",
    description=(
        "End a session. With a summary and/or openItems it leaves the project's handoff "
        "note for the next session (replacing the previous one: one active per project). "
        f"learnings (at most {project_learnings.MAX_PER_CALL}, each 1-"
        f"{project_learnings.MAX_LENGTH} characters, not blank; E1612 otherwise, nothing "
        "written) are kept for the project: the next sessions see the "
        f"{project_learnings.IN_BUNDLE} newest in the WARM tier of their context bundle. "
        "Unknown session: E1600; already ended: E1602; crashed: E1603."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "summary": string(max_length=20000),
                      "openItems": string_list("Open items for the next session", max_items=100),
                      "agentId": string(max_length=255),
                      "learnings": array(
                          string(min_length=1, max_length=project_learnings.MAX_LENGTH),
                          "What this session learned, for the project's next sessions",
                          max_items=project_learnings.MAX_PER_CALL)}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(), "status": {"const": "ended"},
                       "endedAt": TIMESTAMP, "durationSeconds": number(nullable=True),
                       "taskId": string(nullable=True), "tasksWorked": integer(),
                       "handoff": HANDOFF,
                       "learningsRecorded": integer("Learnings kept for the project"),
                       "notificationStatus": NOTIFICATION_STATUS},
                      ["success", "sessionId", "status", "endedAt", "notificationStatus"]),
    handler=_end,
))


def _get_active(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return active.get_active_session(
        criteria={key: args.get(key) for key in active.CRITERIA},
        project_ids=ctx.visible_projects(args.get("projectId")))


ACTIVE_SESSION = obj({
    "sessionId": string(), "projectId": string(), "taskId": string(nullable=True),
    "status": string(enum=SESSION_STATUSES), "startedAt": string(nullable=True),
    "lastHeartbeat": string(nullable=True), "projectDir": string(nullable=True),
    "gitBranch": string(nullable=True), "agentId": string(nullable=True),
    "agentKind": string(nullable=True), "workflow": string(nullable=True),
    "skill": string(nullable=True), "metadata": {"type": "object"},
    "paused": boolean("Paused (pause_session): live, but takes no new work")},
    ["sessionId", "projectId", "status"])

register(Tool(
    name="get_active_session",
    description=(
        "The live session (active or compacted, paused or not) of an agent (agentId or "
        "agentKind, as start_session recorded them) or a workflow, optionally "
        "narrowed by skill and projectId, in the caller's projects: the newest that "
        "matches every criterion given, with liveCount the number that match; found "
        "false and session null when none does. Without agentId, agentKind and "
        "workflow: E1612."
    ),
    input_schema=obj({"agentId": string(max_length=255, min_length=1),
                      "agentKind": AGENT_KIND, "workflow": WORKFLOW, "skill": SKILL,
                      "projectId": project_id("Only sessions of this project")}),
    output_schema=obj({"success": boolean(), "found": boolean(),
                       "session": {**ACTIVE_SESSION, "type": ["object", "null"]},
                       "liveCount": integer()},
                      ["success", "found", "session", "liveCount"]),
    handler=_get_active,
    read_only=True,
))


def _check_recovery(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return recovery.check_recovery(mark_recovered_id=args.get("markRecovered"),
                                   include_history=args.get("includeHistory", False),
                                   project_ids=ctx.visible_projects(args.get("projectId")),
                                   project_dir=args.get("projectDir"),
                                   crashed_session_ids=args.get("crashedSessionIds"))


register(Tool(
    name="check_recovery",
    description=(
        "Sessions needing recovery after a crash or compaction (database flag, stale heartbeats"
        " in the database and the heartbeat file), or closed out as abandoned (timeout), "
        "or still paused PAUSE_RESUME_GRACE_MINUTES after their resetsAt (pause), each "
        "with a markdown resume prompt and the events it wrote after its last saved "
        "state (stateReconciled), in the caller's projects (projectId: in that one; "
        "projectDir: of that directory); the orphaned tasks and the tasks completed "
        "within RECENT_COMPLETION_WINDOW hours to validate (recentCompletions). "
        "markRecovered marks one recovered first (E1631 unknown, E1632 nothing to "
        "recover) and logs coordinator_recovered / orphan_agent_detected."
    ),
    input_schema=obj({"markRecovered": SESSION_ID,
                      "includeHistory": boolean("Add the last 10 tool uses", default=False),
                      "projectId": project_id("Only sessions of this project"),
                      "projectDir": string("Only sessions of this directory", max_length=1000),
                      "crashedSessionIds": CRASHED_SESSIONS}),
    output_schema=RECOVERY_REPORT,
    handler=_check_recovery,
    writes_session=lambda args: args.get("markRecovered"),
    validation_code="E1612",
    database_code="E1630",  # a database failure here is RECOVERY_CHECK_FAILED
))


COMPACTION_PROGRESS = obj({
    "total": integer("The project's tasks that are not archived"),
    "completed": integer(), "restoring": integer("Tasks in progress"),
    "pendingAudit": integer("Tasks completed within RECENT_COMPLETION_WINDOW hours, to "
                            "validate before new work")},
    ["total", "completed", "restoring", "pendingAudit"],
    description="Compaction summary counters of the session's project")
COMPACTION_SUMMARY = string("The 'RESUMED - Compaction #N complete' text with the "
                            "counters (Completed: N/total, Restoring, Pending audit)")


def _report_compaction(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return compaction.report_compaction(
        args["sessionId"], trigger=args.get("trigger", "auto"),
        conversation_summary=args.get("conversationSummary"),
        unsaved_changes=args.get("unsavedChanges"),
        context_remaining=args.get("contextRemaining"),
        context_budget_tokens=args.get("contextBudgetTokens"))


register(Tool(
    name="report_compaction",
    description=(
        "Report that the session's context window was compacted (manual or auto). Records a "
        "recovery record (type 'compaction': task state, summary, unsaved changes, tool "
        "history), counts compactions and returns the resume prompt; every second compaction "
        "needs a full plan reload (fullReloadDue). contextBudgetTokens > 0 adds the task's "
        "contextBundle to re-inject: every tier that fits when fullReloadDue, else HOT only. "
        "progress and summary: the counters of the project (completed / total, "
        "restoring = in progress, pending audit = completed lately)."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "trigger": string(enum=("manual", "auto")),
                      "conversationSummary": string(max_length=50000),
                      "unsavedChanges": UNSAVED_CHANGES,
                      "contextRemaining": number("Share of the window left, 0-1", minimum=0,
                                                 maximum=1),
                      "contextBudgetTokens": BUDGET_TOKENS}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": {"const": "compacted"}, "recoveryType": {"const": "compaction"},
                       "compactionNumber": integer(), "fullReloadDue": boolean(),
                       "resumePrompt": string(), "timestamp": TIMESTAMP,
                       "progress": COMPACTION_PROGRESS, "summary": COMPACTION_SUMMARY,
                       "contextBundle": CONTEXT_BUNDLE},
                      ["success", "sessionId", "compactionNumber", "fullReloadDue",
                       "resumePrompt"]),
    handler=_report_compaction,
))


def _complete_compaction(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return compaction.complete_compaction(
        args["sessionId"], compaction_number=args.get("compactionNumber"),
        full_reload=args.get("fullReload"), summary=args.get("summary"),
        trigger=args.get("trigger"))


register(Tool(
    name="complete_compaction",
    description=(
        "Report that the agent finished reloading after a context compaction, for any "
        "client: logs compaction_complete with compaction_number "
        "and full_reload in the session's event log and, when report_compaction left the "
        "session compacted, ends that recovery (status active). compactionNumber defaults "
        "to the compaction reported and not completed yet, else counts a new one (a "
        "client that never calls report_compaction); a number already completed changes "
        "nothing (alreadyCompleted), one past the next is E1612. fullReload defaults to "
        "every second compaction. summary: what the compacted conversation kept (stored "
        "as the conversation summary). The answer carries the summary counters "
        "(progress, summary). E1600 unknown, E1602 ended, E1603 crashed."
    ),
    input_schema=obj({"sessionId": SESSION_ID,
                      "compactionNumber": integer("Which compaction finished (1, 2, ...)",
                                                  minimum=1, maximum=1000000),
                      "fullReload": boolean("Whether the whole plan was re-read"),
                      "summary": string(max_length=50000),
                      "trigger": string(enum=("manual", "auto"))}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": string(enum=SESSION_STATUSES),
                       "compactionNumber": integer(), "compactionCount": integer(),
                       "fullReload": boolean(), "alreadyCompleted": boolean(),
                       "sequence": integer("The compaction_complete event's sequence"),
                       "progress": COMPACTION_PROGRESS, "summary": COMPACTION_SUMMARY,
                       "timestamp": TIMESTAMP},
                      ["success", "sessionId", "status", "compactionNumber", "fullReload",
                       "alreadyCompleted"]),
    handler=_complete_compaction,
    validation_code="E1612",
))


def _resets_at(value: str | None) -> datetime | None:
    """resetsAt as an aware datetime (UTC without an offset); the input check let through
    only a date-time in range (foundation.core.tools.input_checks.check_date_time)."""
    if value is None:
        return None
    stamp = datetime.fromisoformat(value)
    return stamp if timezone.is_aware(stamp) else stamp.replace(tzinfo=UTC)


def _pause(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return pause.pause_session(args["sessionId"], reason=args["reason"],
                               resets_at=_resets_at(args.get("resetsAt")),
                               remaining_percent=args.get("remainingPercent"))


PAUSE_ANSWER = {"success": boolean(), "sessionId": string(), "paused": boolean(),
                "resumeCount": integer("Pauses ended so far")}

register(Tool(
    name="pause_session",
    description=(
        "Pause a live session: reason usage_limit, user_stop or system_error; "
        "resetsAt when the limit resets; remainingPercent what the usage script reported. "
        "A paused session expects no heartbeats and is never marked crashed; heartbeats "
        "are still taken and leave it paused. While paused it takes no new work: "
        "switch_task and acquire_task_lock naming it and claim_files for it are refused "
        "with E1633 (409, the reason and resumeAt in details); saving its own work "
        "(save_context_snapshot, checkpoints, events, scratchpad, renewing or releasing "
        "its locks, end_session) still works. The pause is written to "
        "RECOVERY_DIR/.session-state.json. resume_session ends the pause, and so does "
        "the next record_activity with a heartbeat (an agent at work again); "
        "PAUSE_RESUME_GRACE_MINUTES after resetsAt the periodic job resume_paused_sessions "
        "ends it (event session_resume, trigger auto_resume) and the session's next hook "
        "answer carries the notice 'SESSION RESUMED - Reset complete'. Until that job "
        "has run, check_recovery lists it with a resume prompt. Logs session_pause "
        "(reason, remaining_percent, resets_at). "
        "Pausing a paused session updates reason and times. E1600 unknown, E1602 ended, "
        "E1603 crashed, E1612 invalid input."
    ),
    input_schema=obj({"sessionId": SESSION_ID,
                      "reason": string(enum=pause.PAUSE_REASONS),
                      "resetsAt": string("When the limit resets (ISO 8601; UTC if no "
                                         "offset)", max_length=64, fmt="date-time"),
                      "remainingPercent": number("Share of the usage left, 0-100",
                                                 minimum=0, maximum=100)},
                     ["sessionId", "reason"]),
    output_schema=obj({**PAUSE_ANSWER, "alreadyPaused": boolean(),
                       **PAUSE["properties"]},
                      ["success", "sessionId", "paused", "alreadyPaused", "reason",
                       "pausedAt", "resetsAt"]),
    handler=_pause,
    validation_code="E1612",
))


def _resume(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return pause.resume_session(args["sessionId"])


register(Tool(
    name="resume_session",
    description=(
        "End a session's pause: logs session_resume with "
        "resume_count and tasks_to_revalidate (its project's tasks completed within "
        "RECENT_COMPLETION_WINDOW hours before the pause). A session that is not paused "
        "answers wasPaused false and nothing changes. E1600 unknown, E1602 ended, E1603 "
        "crashed."
    ),
    input_schema=obj({"sessionId": SESSION_ID}, ["sessionId"]),
    output_schema=obj({**PAUSE_ANSWER, "wasPaused": boolean(),
                       "reason": string(enum=pause.PAUSE_REASONS, nullable=True),
                       "pausedAt": string(nullable=True),
                       "pausedSeconds": number(),
                       "tasksToRevalidate": string_list("Tasks completed lately, "
                                                        "to validate before new work")},
                      ["success", "sessionId", "paused", "wasPaused", "resumeCount"]),
    handler=_resume,
    validation_code="E1612",
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
    description="The session's mutable scratchpad (working memory).",
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
))


def _record_activity(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return activity.record_activity(
        args["sessionId"], task_id=args.get("taskId"), tool_uses=args.get("toolUses"),
        conversation_summary=args.get("conversationSummary"),
        heartbeat=args.get("heartbeat", True), notices=args.get("notices", False))


HOOK_TOOL_USE = obj({
    "tool": string("Agent tool name (Edit, Write, Bash, ...)", min_length=1, max_length=100),
    "success": boolean(),
    "timestamp": string("ISO 8601 time of the tool use", max_length=64, fmt="date-time"),
    "filePaths": string_list("Files the tool touched; those of Edit, Write, MultiEdit and "
                             "NotebookEdit join the task's keyFiles", max_items=50,
                             max_length=1000),
    "summary": string("What it did, shown in resume prompts", max_length=500)},
    ["tool", "success", "timestamp"])

register(Tool(
    name="record_activity",
    description=(
        "One round trip for a batch of agent hook events: a heartbeat (same rules and codes "
        "as heartbeat: E1600 unknown, E1602 ended, E1603 crashed; heartbeat false skips it "
        "and records on a crashed session too: the tool uses a killed agent left unsent), "
        "a tool-history row per tool use (transport hook; they appear in check_recovery and "
        "resume prompts) and the paths of Edit/Write/MultiEdit/NotebookEdit merged into the "
        "session task's keyFiles (relative to the session's projectDir when under it; a new "
        "context version only when a path is new), so detect_conflicts finds file conflicts "
        "between parallel agents. Edited paths also renew the session's file claims "
        "(claim_files), and a claim another task's live session holds is a file_conflict "
        "at once. notices true takes the session's pending notices (notices)."
    ),
    input_schema=obj({"sessionId": SESSION_ID, "taskId": TASK_ID,
                      "toolUses": array(HOOK_TOOL_USE, max_items=200),
                      "conversationSummary": string(max_length=50000),
                      "heartbeat": boolean(default=True),
                      "notices": boolean("Also take the session's pending notices (for a "
                                         "client that shows them to its model)",
                                         default=False)}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "taskId": string(nullable=True), "recorded": integer(),
                       "keyFilesAdded": string_list(), "lastHeartbeat": string(nullable=True),
                       "notices": string_list("Pending notices, oldest first, now "
                                              "delivered (with notices true)")},
                      ["success", "sessionId", "taskId", "recorded", "keyFilesAdded",
                       "lastHeartbeat"]),
    handler=_record_activity,
))


def _get_context_bundle(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return agent_context.bundle_for(
        task_id=args.get("taskId"), session_id=args.get("sessionId"),
        budget_tokens=args.get("budgetTokens", bundle.DEFAULT_BUDGET_TOKENS),
        tiers=args.get("tiers"))


register(Tool(
    name="get_context_bundle",
    description=(
        "A task's context (or the task of sessionId) as markdown ready to inject, in "
        "three tiers: HOT (status, immediate context, blockers, locks, unresolved "
        "conflicts, hard rules; never dropped), WARM (description, notes, key files, recent "
        "decisions, relationships, tech stack), COLD (older decisions, keywords, version "
        "history, key paths). Over budgetTokens (tokens ~ characters / 4) COLD goes first, "
        "then WARM; HOT is never cut: when it alone is over, the text is whole and "
        "overBudget is true. Keys marked critical (mark_critical) move into HOT."
    ),
    input_schema=obj({"taskId": TASK_ID, "sessionId": SESSION_ID,
                      "budgetTokens": integer("Default 2000", minimum=1,
                                              maximum=bundle.MAX_BUDGET_TOKENS,
                                              default=bundle.DEFAULT_BUDGET_TOKENS),
                      "tiers": array(TIER, "Tiers wanted (HOT is always in)", unique=True)}),
    output_schema=obj({"success": boolean(), **CONTEXT_BUNDLE["properties"]},
                      ["success", *CONTEXT_BUNDLE["required"]]),
    handler=_get_context_bundle,
    read_only=True,
))


# -- operations for in-process callers only (beat, cron, the console) -----------------------

def _sweep(name: str, description: str, key: str, listed: str,
           run: Callable[[], list[str]]) -> None:
    """An internal tool that runs one sweep and answers the sessions it touched under
    ``key`` (beat, cron and the console call these; no agent does)."""
    register(Tool(
        name=name,
        description=description,
        input_schema=obj({}),
        output_schema=obj({"success": boolean(), key: string_list(listed),
                           "timestamp": TIMESTAMP}, ["success", key, "timestamp"]),
        handler=lambda args, ctx: {"success": True, key: run(), "timestamp": now_iso()},
        internal=True,
    ))


_sweep(
    "detect_crashed_sessions",
    (
        "The crash sweep: every live session whose heartbeat is older than "
        "CRASH_THRESHOLD_MINUTES is marked crashed, with its recovery snapshot. Beat runs "
        "it every HEARTBEAT_INTERVAL_MS; manage.py detect_crashed_sessions runs it once."
    ),
    "crashed", "Sessions marked crashed", recovery.detect_crashed_sessions,
)

_sweep(
    "resume_paused_sessions",
    (
        "The auto-resume: every live session paused with a resetsAt that is more "
        "than PAUSE_RESUME_GRACE_MINUTES past is resumed (event session_resume with "
        "trigger auto_resume, a log line, and a notice for its next hook answer). Beat "
        "runs it every HEARTBEAT_INTERVAL_MS; manage.py resume_paused_sessions runs it once."
    ),
    "resumed", "Sessions resumed", pause.resume_paused_sessions,
)

_sweep(
    "clean_stale_sessions",
    (
        "Close out abandoned sessions: a live session (active or compacted) silent for "
        "longer than STALE_SESSION_HOURS (a paused one: that long after its resetsAt) is "
        "ended with recovery type timeout, keeping its recovery flag so check_recovery "
        "still offers its resume prompt. Nothing is deleted: events, tool history and "
        "handoffs stay until retention (RETENTION_EVENT_DAYS) removes them. Beat runs it "
        "every STALE_SESSION_SWEEP_INTERVAL_SECONDS; manage.py clean_stale_sessions runs "
        "it once."
    ),
    "closed", "Sessions ended as abandoned (timeout)", recovery.clean_stale_sessions,
)


def _mark_crashed(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    recovery.mark_crashed(args["sessionId"])
    return {"success": True, "sessionId": args["sessionId"], "status": "crashed",
            "timestamp": now_iso()}


register(Tool(
    name="mark_session_crashed",
    description=(
        "Declare a live session crashed now, whatever its heartbeat says (the console's "
        "action): its recovery snapshot is taken and it is listed by check_recovery. "
        "E1600 unknown, E1602 not live."
    ),
    input_schema=obj({"sessionId": SESSION_ID}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "status": {"const": "crashed"}, "timestamp": TIMESTAMP},
                      ["success", "sessionId", "status", "timestamp"]),
    handler=_mark_crashed,
    internal=True,
))


# -- what a project-limited token may name (foundation.core.tools.access) ----------------
# Sessions live in a project (and are owned by the token that started them).
def _register_project_entities() -> None:
    from foundation.core.db import qualified
    from foundation.core.errors import session_not_found
    from foundation.core.tools.access import (
        SESSION_KIND,
        register_argument,
        register_entity,
        register_list_argument,
    )

    register_entity(SESSION_KIND, f"SELECT session_id, project_id FROM "
                    f"{qualified('active_sessions')} WHERE session_id = ANY(%s)")
    register_argument("sessionId", SESSION_KIND, session_not_found)
    register_argument("markRecovered", SESSION_KIND,
                      lambda item: session_not_found(item, code="E1631"))
    # Sessions a sweep marks crashed now: only where they exist, are live and the caller's.
    register_list_argument("crashedSessionIds", SESSION_KIND, own_sessions=True)


_register_project_entities()
