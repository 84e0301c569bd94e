"""File claim tools: claim_files, release_files, get_file_claims (claims.services:
claiming, queries).

The Claude Code hooks claim before every edit on their own; these are for every other
agent, and for people and dashboards asking who is editing what."""

from __future__ import annotations

from typing import Any

from claims.services import claimants, claiming, queries
from foundation.core.tools import Tool, ToolContext, register
from foundation.core.tools.schema import (
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

SESSION_ID = safe_id("The claiming session (letters, digits, . _ : -)")
PATHS = string_list("Files, relative to the repository root (an absolute path under the "
                    "session's project directory is made relative)", max_items=claimants.MAX_PATHS,
                    max_length=claimants.MAX_PATH_LENGTH)
HOLDER = obj({
    "projectId": string(), "path": string(), "sessionId": string(), "taskId": string(nullable=True),
    "taskName": string(nullable=True), "taskStatus": string(nullable=True),
    "agentId": string(nullable=True),
    "doing": string("The task's immediateContext.workingOn, else its currentPhase",
                    nullable=True),
    "state": string("held: claimed now; recent: its TTL ran out less than "
                    "FILE_CLAIM_RECENT_SECONDS ago and its session is still live",
                    enum=("held", "recent")),
    "claimedAt": TIMESTAMP, "lastEditAt": TIMESTAMP, "expiresAt": TIMESTAMP,
    "secondsSinceEdit": number()},
    ["projectId", "path", "sessionId", "taskId", "agentId", "state", "claimedAt", "lastEditAt",
     "expiresAt", "secondsSinceEdit"])
CONFLICT = obj({"conflictId": string(), "taskAId": string(), "taskBId": string(),
                "severity": string(), "description": string(),
                "new": boolean("Recorded by this call (false: it was already open)")},
               ["conflictId", "taskAId", "taskBId", "severity", "new"])


def _claim(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return claiming.claim(args["sessionId"], args["paths"], ttl_seconds=args.get("ttlSeconds"),
                          source="tool")


register(Tool(
    name="claim_files",
    description=(
        "Say that a live session is editing these files for its task. The answer names "
        "every other live session of another task that holds or recently held one of them "
        "(holders; warnings: those not reported to this session before). Policy warn (the "
        "project's orchestratorContext.fileClaims): the files are claimed, and a file "
        "another task holds is a file_conflict at once (conflicts), its holder told on its "
        "next hook answer. Policy block: nothing is claimed (blocked true, message says "
        "why). A claim lasts while the session is live, until release_files, or ttlSeconds "
        "after the last claim or edit of the file (FILE_CLAIM_TTL_SECONDS by default). "
        "Ignored paths (the policy's ignore globs) are listed, never claimed. notices: the "
        "session's pending notices, now delivered. E1600 unknown session, E1602 ended, "
        "E1603 crashed, E1633 paused (a paused session claims no new files: pause_session; "
        "the claims its hook flushes for edits already made are kept), E1612 a path "
        "outside the repository."),
    input_schema=obj({
        "sessionId": SESSION_ID, "paths": {**PATHS, "minItems": 1},
        "ttlSeconds": integer("How long the claim lasts after this call without another "
                              "claim or edit of the file", minimum=claimants.MIN_TTL_SECONDS,
                              maximum=claimants.MAX_TTL_SECONDS)}, ["sessionId", "paths"]),
    output_schema=obj({
        "success": boolean(), "sessionId": string(), "taskId": string(nullable=True),
        "projectId": string(), "policy": string(enum=("warn", "block")),
        "blocked": boolean(), "claimed": string_list(), "ignored": string_list(),
        "holders": array(HOLDER), "warnings": array(HOLDER),
        "conflicts": array(CONFLICT), "notices": string_list(),
        "message": string("What to tell the agent (null: nothing)", nullable=True),
        "expiresInSeconds": integer(), "timestamp": TIMESTAMP},
        ["success", "sessionId", "taskId", "projectId", "policy", "blocked", "claimed",
         "ignored", "holders", "warnings", "conflicts", "notices", "message", "timestamp"]),
    handler=_claim,
))


register(Tool(
    name="release_files",
    description=(
        "End a session's claims on these files (every claim of the session when paths is "
        "omitted): they warn no one any more. An ended session's claims end by themselves. "
        "E1600 unknown session."),
    input_schema=obj({"sessionId": SESSION_ID, "paths": PATHS}, ["sessionId"]),
    output_schema=obj({"success": boolean(), "sessionId": string(),
                       "released": string_list(), "timestamp": TIMESTAMP},
                      ["success", "sessionId", "released", "timestamp"]),
    handler=lambda args, ctx: claiming.release(args["sessionId"], args.get("paths")),
))


def _get(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
    return queries.file_claims(
        ctx.visible_projects(args.get("projectId")), paths=args.get("paths"),
        task_id=args.get("taskId"), session_id=args.get("sessionId"),
        include_recent=args.get("includeRecent", True))


register(Tool(
    name="get_file_claims",
    description=(
        "Who is editing what now: the live claims of the project (file, task, session, "
        "agent, last edit), contested files (held by two tasks or more) first. paths: "
        "only those files; taskId: the task's claims and the other tasks' claims on the "
        "same files; sessionId: one session's. includeRecent false leaves out claims whose "
        "TTL ran out. E1610 unknown task."),
    input_schema=obj({
        "projectId": project_id(), "paths": PATHS,
        "taskId": safe_id("Only this task's files (and who else holds them)"),
        "sessionId": safe_id("Only this session's claims"),
        "includeRecent": boolean("Also claims of live sessions whose TTL ran out lately",
                                 default=True)}),
    output_schema=obj({
        "success": boolean(),
        "claims": array({**HOLDER, "properties": {
            **HOLDER["properties"],
            "contested": boolean("Another task also holds this file")}}),
        "contested": string_list("Files two tasks or more hold now (paths; each claim "
                                 "says its project)"),
        "total": integer(), "timestamp": TIMESTAMP},
        ["success", "claims", "contested", "total", "timestamp"]),
    handler=_get,
    read_only=True,
))
