"""What each Claude Code hook event does (docs/agents/claude-code.md).

    SessionStart  startup/clear/fork: start an orchestrator session, inject its context;
                  resume: keep the mapped session alive and re-inject; compact: record the
                  compaction and re-inject (the full bundle on every second one)
    PostToolUse   tool history + heartbeat, batched: one round trip per few seconds;
                  says the session's notices (another agent began editing its file)
    UserPromptSubmit  heartbeat, and the session's notices next to the prompt
    PreToolUse    (edits, synchronous, ``edit_check``) claim the file: warn or refuse
    Stop          heartbeat with a conversation summary (every turn)
    PreCompact    save what the transcript holds before the context is lost
    StopFailure   record the API error; a usage/rate limit pauses the session
    PostCompact   complete_compaction (compaction_complete) with Claude's own summary
    SessionEnd    end the session, leaving a handoff note for the next one
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from orchestrator_hook import context, lite
from orchestrator_hook.config import Config
from orchestrator_hook.service import Service
from orchestrator_hook.state import ProjectState, read_json
from orchestrator_hook.transcript import read_tail
from orchestrator_hook.transport import ToolRefused

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LAUNCHER = Path(__file__).resolve().with_name("launch.py")
# The orchestrator no longer takes calls for this session: unknown, ended or crashed.
SESSION_GONE = frozenset({"E1600", "E1602", "E1603"})
TOOL_USES_PER_CALL = 200
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "fish"})


class Hook:
    """One hook process's event and what it works with. (A plain class: ``dataclasses``
    imports ``inspect``, which costs every hook more than its work.)"""

    def __init__(self, event: str, payload: dict[str, Any], project_dir: Path,
                 state: ProjectState, config: Config, service: Service) -> None:
        self.event, self.payload, self.project_dir = event, payload, project_dir
        self.state, self.config, self.service = state, config, service
        # Notices the service handed this hook (another agent began editing a file of this
        # session): said in this hook's answer when its event can carry context.
        self.notices: list[str] = []

    @property
    def claude_session(self) -> str:
        return lite.claude_session_of(self.payload)

    @property
    def agent_kind(self) -> str:
        """The agent whose hook this is (``agents``; Claude Code's payloads do not say)."""
        return str(self.payload.get("agent_kind") or "claude-code")

    @property
    def agent_id(self) -> str:
        """The session's agentId: the configured one for Claude Code (``claude-code``
        unless set), the agent kind for the others, so a warning about a file names who
        holds it (``codex session ... on task ...``)."""
        return self.config.agent_id if self.agent_kind == "claude-code" else self.agent_kind

    def mapped_session_id(self) -> str | None:
        entry = self.state.mapped_session(self.claude_session)
        return entry.get("sessionId") if entry else None


# -- SessionStart ------------------------------------------------------------------------

def session_start(hook: Hook) -> dict[str, Any]:
    source = str(hook.payload.get("source") or "startup")
    hook.service.drain()
    flush_other_sessions(hook)
    hook.state.prune_activity()
    entry = hook.state.mapped_session(hook.claude_session)
    if entry and not entry.get("ended"):
        if source == "compact":
            return after_compaction(hook, entry)
        if source == "resume":
            resumed = resume(hook, entry)
            if resumed is not None:
                return resumed
    return start(hook, source, previous=entry)


def start(hook: Hook, source: str, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """Start an orchestrator session for this Claude session and build its context.

    ``previous``: this Claude session's earlier mapping (a resumed conversation whose
    orchestrator session ended): its handoff note is the one to read, not the project's.
    """
    session_id = new_session_id()
    arguments: dict[str, Any] = {
        "sessionId": session_id, "projectDir": str(hook.project_dir),
        "agentId": hook.agent_id, "contextBudgetTokens": hook.config.budget_tokens,
        # The kind of agent (agents.KINDS): get_active_session(agentKind=...) finds it.
        "agentKind": hook.agent_kind}
    if previous and previous.get("sessionId") and source in ("resume", "fork", "restart"):
        arguments["previousSessionId"] = previous["sessionId"]
    if hook.config.project_id:
        arguments["projectId"] = hook.config.project_id
    branch = git_branch(hook.project_dir)
    if branch:
        arguments["gitBranch"] = branch
    pid = agent_process_id()
    if pid:
        arguments["processId"] = pid
    crashed = dead_sessions(hook)
    if crashed:
        arguments["crashedSessionIds"] = crashed
    if hook.config.task_id:
        arguments["taskId"] = hook.config.task_id
    else:
        # The task this branch worked on, else the branch's (or directory's) own task,
        # made on first use: a session is tracked from its first edit with no flags.
        arguments["resolveTask"] = True
        arguments["createTask"] = True
    # Map first: the hooks that follow need the id even if the start waits in the spool.
    hook.state.update_session(hook.claude_session, sessionId=session_id,
                              taskId=hook.config.task_id, source=source, ended=False,
                              agentPid=pid, agentStarted=process_start_time(pid),
                              agentKind=hook.agent_kind,
                              transcriptPath=hook.payload.get("transcript_path"))
    for claude_session in crashed_claude_sessions(hook, crashed):
        # What it was doing when it died, before the crash makes its resume prompt.
        report_dead_session(hook, claude_session)
        hook.state.update_session(claude_session, ended=True, crashed=True)
    hook.state.mark_flushed(hook.claude_session)
    try:
        answer = hook.service.send("start_session", arguments)
    except ToolRefused as exc:
        answer = start_again(hook, arguments, exc)
        if answer is None:
            return offline(hook, f"the orchestrator refused to start a session ({exc.code}); "
                                 "see .claude/orchestrator/hook.log")
    start_watchdog(hook, session_id, (answer or {}).get("heartbeatIntervalMs"))
    if answer is None:
        return offline(hook, "the session orchestrator could not be reached")
    task_id = answer.get("taskId")
    hook.state.update_session(hook.claude_session, taskId=task_id,
                              heartbeatIntervalMs=answer.get("heartbeatIntervalMs"))
    bundle, handoff = answer.get("contextBundle"), answer.get("handoff")
    context.save_mirror(hook.project_dir, sessionId=session_id, taskId=task_id,
                        contextBundle=bundle, handoff=handoff)
    recovery = answer.get("recovery")
    text = context.compose([
        ("", session_header(session_id, task_id, answer.get("taskSource"),
                            answer.get("projectId"), hook.config.all_tools,
                            hook.agent_kind)),
        # The resume prompts and the bundle carry their own headings.
        ("", context.recovery_text(recovery, own_session=session_id)),
        (context.handoff_heading(handoff), context.handoff_text(handoff)),
        ("", context.bundle_text(bundle)),
    ], project_dir=hook.project_dir)
    mark_resumed_crashes(hook, recovery, task_id, session_id)
    return additional_context(text)


def start_again(hook: Hook, arguments: dict[str, Any], refusal: ToolRefused
                ) -> dict[str, Any] | None:
    """One more try after a refused start, without what the service objected to."""
    hook.state.log(f"start_session refused: {refusal}")
    if refusal.code == "E1610" and "taskId" in arguments:
        # The configured task is gone: choose from the branch or the active task instead.
        arguments.pop("taskId")
        arguments["resolveTask"] = True
    elif refusal.code == "E1612":
        # An older service without the bundle, task choice or agent kind: a plain start
        # still helps.
        arguments.pop("contextBudgetTokens", None)
        arguments.pop("resolveTask", None)
        arguments.pop("agentKind", None)
    else:
        return None
    return hook.service.send_quietly("start_session", arguments)


def resume(hook: Hook, entry: dict[str, Any]) -> dict[str, Any] | None:
    """``claude --resume``: carry on in the mapped session if the orchestrator still has
    it open; None when it does not (the caller starts a new one)."""
    session_id = entry["sessionId"]
    try:
        alive = hook.service.send("heartbeat", {"sessionId": session_id})
    except ToolRefused as exc:
        if exc.code in SESSION_GONE:
            return None
        hook.state.log(f"heartbeat refused on resume: {exc}")
        alive = None
    if alive is None:
        return offline(hook, "the session orchestrator could not be reached")
    if alive.get("paused"):  # back after a usage limit: the pause is over
        hook.service.send_quietly("resume_session", {"sessionId": session_id})
    pid = agent_process_id()  # a resumed session may run in a new Claude Code process
    hook.state.update_session(hook.claude_session, agentPid=pid,
                              agentStarted=process_start_time(pid),
                              transcriptPath=hook.payload.get("transcript_path")
                              or entry.get("transcriptPath"))
    start_watchdog(hook, session_id, entry.get("heartbeatIntervalMs"))
    bundle = None
    if alive.get("taskId"):
        bundle = hook.service.send_quietly(
            "get_context_bundle", {"sessionId": session_id,
                                   "budgetTokens": hook.config.budget_tokens})
        if bundle:
            context.save_mirror(hook.project_dir, sessionId=session_id,
                                taskId=alive.get("taskId"), contextBundle=bundle)
    return additional_context(context.compose([
        ("", session_header(session_id, alive.get("taskId"), "resumed",
                            hook.config.project_id, hook.config.all_tools,
                            hook.agent_kind)),
        ("", context.bundle_text(bundle))], project_dir=hook.project_dir))


def after_compaction(hook: Hook, entry: dict[str, Any]) -> dict[str, Any]:
    session_id = entry["sessionId"]
    flush_activity(hook, hook.claude_session)
    arguments = {"sessionId": session_id, "trigger": entry.get("compactTrigger") or "auto",
                 "contextBudgetTokens": hook.config.budget_tokens}
    try:
        answer = hook.service.send("report_compaction", arguments)
    except ToolRefused as exc:
        if exc.code in SESSION_GONE:
            return start(hook, "compact")
        hook.state.log(f"report_compaction refused: {exc}")
        answer = None
    hook.state.update_session(hook.claude_session, compactTrigger=None)
    if answer is not None:  # PostCompact names it in complete_compaction
        hook.state.update_session(hook.claude_session,
                                  lastCompaction=answer.get("compactionNumber"),
                                  lastCompactionSession=session_id)
    if answer is None:
        return offline(hook, "the session orchestrator could not be reached after a "
                             "compaction")
    bundle = answer.get("contextBundle")
    if bundle:
        context.save_mirror(hook.project_dir, sessionId=session_id,
                            taskId=bundle.get("taskId"), contextBundle=bundle)
    number, full = answer.get("compactionNumber"), answer.get("fullReloadDue")
    header = (f"The conversation was compacted (compaction {number} of orchestrator session "
              f"{session_id}). " + ("This is a full reload: the whole task context follows."
                                    if full else "The essential task context follows."))
    # The "RESUMED - Compaction #N complete" counters: here, in SessionStart
    # (compact), because PostCompact's output never reaches the model (Claude Code
    # discards it); PostCompact's complete_compaction answers them again for the log.
    return additional_context(context.compose([
        ("", header), ("", str(answer.get("summary") or "")),
        ("", str(answer.get("resumePrompt") or "")),
        ("", context.bundle_text(bundle))], project_dir=hook.project_dir))


def offline(hook: Hook, reason: str) -> dict[str, Any]:
    """The service is unreachable: inject the last context mirrored in the project."""
    mirror = context.load_mirror(hook.project_dir) or {}
    note = (f"Session orchestrator offline: {reason}. Heartbeats and tool history are kept "
            "in .claude/orchestrator/spool and sent when it is back.")
    spooled = hook.state.spooled()
    oldest = hook.state.spooled_since()
    if oldest is not None and time.time() - oldest > SPOOLING_LONG_SECONDS:
        since = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(oldest))
        note += (f" It has been out of reach since {since}: {len(spooled)} calls are "
                 f"waiting ({hook.config.url}; `manage.py claude_setup --check` says "
                 "more).")
    if mirror:
        note += f" The context below is the local copy saved at {mirror.get('savedAt')}."
    text = context.compose([
        ("", note),
        (context.handoff_heading(mirror.get("handoff")),
         context.handoff_text(mirror.get("handoff"))),
        ("", context.bundle_text(mirror.get("contextBundle"))),
    ], project_dir=hook.project_dir)
    return additional_context(text, system_message="Session orchestrator offline; using the "
                                                    "local copy of the context.")


def session_header(session_id: str, task_id: Any, how: Any, project_id: Any = None,
                   all_tools: bool = False, agent_kind: str = "claude-code") -> str:
    from orchestrator_hook.agents import label

    chosen = {"argument": "set for this project", "branch": "from the git branch",
              "branchTask": "this git branch's task",
              "created": "created now for this git branch (or directory): rename it, or "
                         "switch_task to another task",
              "active": "the project's active task", "resumed": "resumed"}.get(str(how), "")
    task = (f"works on task `{task_id}`" + (f" ({chosen})" if chosen else "")
            if task_id else "has no task yet")
    project = f" in project `{project_id}`" if project_id else ""
    read, save = ("get_unified_context", "save_context_snapshot") if all_tools \
        else ("get_task_context", "save_task_context")
    return (f"Session orchestrator: this {label(agent_kind)} session is orchestrator session "
            f"`{session_id}`{project} and {task}. Heartbeats, tool history, compactions and a "
            "handoff note at the end are recorded by hooks; the orchestrator's MCP tools give the "
            f"full context ({read}) and save it ({save}).")


def mark_resumed_crashes(hook: Hook, recovery: Any, task_id: Any, session_id: str) -> None:
    """A crashed session of this same task is taken over by the new one: mark it recovered.
    Crashed sessions of other tasks stay listed: their work is still orphaned."""
    if not task_id or not isinstance(recovery, dict):
        return
    for entry in recovery.get("sessions") or []:
        if (isinstance(entry, dict) and entry.get("taskId") == task_id
                and entry.get("recoveryType") != "compaction"
                and entry.get("sessionId") != session_id):
            hook.service.send_quietly("check_recovery", {"markRecovered": entry["sessionId"]})


# -- tool uses, turns, compaction, end ----------------------------------------------------

def post_tool_use(hook: Hook) -> dict[str, Any] | None:
    # lite.buffer_tool_use is this handler's fast path (no flush due, nothing spooled):
    # a change here belongs there too.
    hook.state.append_activity(hook.claude_session,
                               tool_use_entry(hook, success=hook.event == "PostToolUse"))
    due = time.time() - hook.state.last_flush(hook.claude_session) >= hook.config.flush_seconds
    # Calls wait in the spool and the service may be back: send now, behind them.
    backlog = hook.state.spooled() and not hook.state.service_down()
    if due or backlog:
        flush_activity(hook, hook.claude_session, notices=True)
    return notices_output(hook, "PostToolUse")


def user_prompt_submit(hook: Hook) -> dict[str, Any] | None:
    """A new request: the session is alive (heartbeat, unsent tool uses), and what other
    agents did to its files meanwhile goes next to the prompt."""
    flush_activity(hook, hook.claude_session, notices=True)
    remember_turn(hook, lastPrompt=hook.payload.get("prompt"))
    return notices_output(hook, "UserPromptSubmit")


def notices_output(hook: Hook, event: str) -> dict[str, Any] | None:
    if not hook.notices:
        return None
    return {"hookSpecificOutput": {"hookEventName": event,
                                   "additionalContext": "\n\n".join(hook.notices)[:9000]}}


def stop(hook: Hook) -> None:
    flush_activity(hook, hook.claude_session, summary=conversation_summary(hook))
    remember_turn(hook, lastAnswer=hook.payload.get("last_assistant_message"))


def remember_turn(hook: Hook, **texts: Any) -> None:
    """The last prompt and answer of an agent whose transcript the client does not read
    (Codex, Gemini CLI: ``transcript`` knows Claude Code's format only), kept in the
    session map for the handoff note and the crash report."""
    if hook.agent_kind == "claude-code":
        return
    kept = {key: lite.clip(text, 2000) for key, text in texts.items()
            if isinstance(text, str) and text.strip()}
    if kept and hook.state.mapped_session(hook.claude_session):
        hook.state.update_session(hook.claude_session, **kept)


def stop_failure(hook: Hook) -> None:
    """A turn ended by an API error (rate limit, prompt too long, ...): recorded with the
    heartbeat, not a crash; the session goes on with the next prompt. A usage or rate
    limit pauses the session (pause_session, reason usage_limit, with the reset time when
    Claude Code gives one): no crash while it waits, and the next prompt's or tool use's
    flush resumes it."""
    session_id = flush_activity(hook, hook.claude_session)
    if not session_id:
        return
    error = str(hook.payload.get("error_type") or hook.payload.get("error") or "unknown")
    details = str(hook.payload.get("error_details") or hook.payload.get("error_message") or "")
    hook.service.send_quietly("append_session_event", {
        "sessionId": session_id, "type": "system_event", "role": "system",
        "content": "stop_failure",
        "parts": {"error": error[:200], "details": details[:2000]}})
    if usage_limited(hook.payload):
        arguments: dict[str, Any] = {"sessionId": session_id, "reason": "usage_limit"}
        resets_at = limit_resets_at(hook.payload)
        if resets_at:
            arguments["resetsAt"] = resets_at
        hook.service.send_quietly("pause_session", arguments)


USAGE_LIMIT_ERRORS = frozenset({"rate_limit", "rate_limit_error", "usage_limit", "429"})
USAGE_LIMIT_WORDS = ("usage limit", "rate limit", "rate_limit", "limit reached",
                     "limit will reset", "429")


def usage_limited(payload: dict[str, Any]) -> bool:
    """Whether a StopFailure says a usage or rate limit: its error type (``error_type``,
    or ``error`` as older builds name it) or, for ``unknown``, the words of its message."""
    kinds = {str(payload.get(key) or "").strip().lower() for key in ("error_type", "error")}
    if kinds & USAGE_LIMIT_ERRORS:
        return True
    if kinds - {"", "unknown"}:
        return False  # another known error (invalid_request, server_error, ...)
    text = " ".join(str(payload.get(key) or "") for key in (
        "error_details", "error_message", "last_assistant_message")).lower()
    return any(word in text for word in USAGE_LIMIT_WORDS)


def limit_resets_at(payload: dict[str, Any]) -> str | None:
    """When the limit resets, if the payload says so: a ``resets_at`` field (ISO 8601 or
    Unix seconds), or the Unix time Claude Code puts after a ``|`` in its "usage limit
    reached|<epoch>" message, or an ISO 8601 time in the message; None otherwise."""
    import re

    for key in ("resets_at", "resetsAt", "reset_at"):
        value = payload.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return epoch_iso(value)
        if isinstance(value, str) and value.strip():
            return value.strip()[:64]
    text = " ".join(str(payload.get(key) or "") for key in (
        "error_details", "error_message", "last_assistant_message"))
    match = re.search(r"\|\s*(\d{10})(?!\d)", text)
    if match:
        return epoch_iso(int(match.group(1)))
    match = re.search(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?"
                      r"(?:Z|[+-]\d{2}:?\d{2})?", text)
    return match.group(0) if match else None


def epoch_iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def subagent_event(hook: Hook) -> None:
    """SubagentStart / SubagentStop: a subagent is not a session of its own. Its tool uses
    arrive with the parent's session id (PostToolUse, ``agent_id`` set) and count for
    the parent's session and task; here only that it ran, and what it answered."""
    session_id = hook.mapped_session_id()
    if not session_id:
        return
    parts: dict[str, Any] = {"agentId": str(hook.payload.get("agent_id") or ""),
                             "agentType": str(hook.payload.get("agent_type") or "")}
    if hook.event == "SubagentStop":
        flush_activity(hook, hook.claude_session, heartbeat=False)
        answer = hook.payload.get("last_assistant_message")
        if isinstance(answer, str) and answer.strip():
            parts["lastAnswer"] = lite.clip(answer, 2000)
    hook.service.send_quietly("append_session_event", {
        "sessionId": session_id, "type": "system_event", "role": "system",
        "content": "subagent_start" if hook.event == "SubagentStart" else "subagent_stop",
        "parts": parts})


def pre_compact(hook: Hook) -> None:
    trigger = hook.payload.get("trigger") if hook.payload.get("trigger") in (
        "manual", "auto") else "auto"
    tail = read_tail(hook.payload.get("transcript_path"))
    session_id = flush_activity(hook, hook.claude_session, summary=conversation_summary(hook))
    hook.state.update_session(hook.claude_session, compactTrigger=trigger)
    if session_id:
        hook.service.send_quietly("append_session_event", {
            "sessionId": session_id, "type": "system_event", "role": "system",
            "content": "pre_compact",
            "parts": {"trigger": trigger,
                      "customInstructions": hook.payload.get("custom_instructions") or "",
                      "lastRequests": tail.user_prompts[-3:],
                      "lastToolActions": tail.tool_actions[-20:]}})


def post_compact(hook: Hook) -> None:
    """The compaction is over and SessionStart(compact) re-injected the context: report
    it complete (complete_compaction: the compaction_complete event, the session active
    again), naming the compaction report_compaction counted so a resent call is
    harmless."""
    summary = str(hook.payload.get("compact_summary") or "")
    session_id = flush_activity(hook, hook.claude_session,
                                summary=summary[-20000:] if summary else None)
    if not session_id:
        return
    arguments: dict[str, Any] = {"sessionId": session_id}
    if summary:
        arguments["summary"] = summary[:20000]
    if hook.payload.get("trigger") in ("manual", "auto"):
        arguments["trigger"] = hook.payload["trigger"]
    entry = hook.state.mapped_session(hook.claude_session) or {}
    number = entry.get("lastCompaction")
    if isinstance(number, int) and number > 0 and entry.get("lastCompactionSession") == \
            session_id:
        arguments["compactionNumber"] = number
    answer = hook.service.send_quietly("complete_compaction", arguments)
    if isinstance(answer, dict) and answer.get("summary"):
        # Claude Code discards PostCompact output: the hook log keeps the counters.
        hook.state.log(str(answer["summary"]).replace("\n\n", ": ").replace("\n", ", "))


def session_end(hook: Hook) -> None:
    # First: the session ends by intent, whatever happens below (a cut-off hook, a spooled
    # call); the watchdog must not report it as a crash.
    stop_watchdog(hook, hook.claude_session)
    session_id = flush_activity(hook, hook.claude_session, start_if_missing=False)
    if not session_id:
        return
    reason = str(hook.payload.get("reason") or "other")
    entry = hook.state.mapped_session(hook.claude_session) or {}
    summary = handoff_summary(with_remembered_turn(
        read_tail(hook.payload.get("transcript_path")), entry), reason, hook.agent_kind)
    hook.service.send_quietly("end_session", {"sessionId": session_id,
                                              "summary": summary[:20000]})
    hook.state.update_session(hook.claude_session, ended=True)
    hook.state.forget_activity(hook.claude_session)


def with_remembered_turn(tail: Any, entry: dict[str, Any]) -> Any:
    """The transcript's tail, or what ``remember_turn`` kept when it had none."""
    if not tail.user_prompts and isinstance(entry.get("lastPrompt"), str):
        tail.user_prompts.append(entry["lastPrompt"])
    if not tail.assistant_texts and isinstance(entry.get("lastAnswer"), str):
        tail.assistant_texts.append(entry["lastAnswer"])
    return tail


def handoff_summary(tail: Any, reason: str, agent_kind: str = "claude-code") -> str:
    """The note the next session reads: readable lines, most useful first."""
    from orchestrator_hook.agents import label

    lines = [f"{label(agent_kind)} session ended ({reason})."]
    if tail.user_prompts:
        lines.append(f"Last request: {lite.clip(tail.user_prompts[-1], 600)}")
    if tail.assistant_texts:
        lines.append(f"Last answer: {lite.clip(tail.assistant_texts[-1], 1500)}")
    if tail.tool_actions:
        lines.append("Last actions:")
        lines.extend(f"- {action}" for action in tail.tool_actions[-8:])
    return "\n".join(lines)


# -- liveness ----------------------------------------------------------------------------

# The spool holding calls older than this is worth one line in the injected context.
SPOOLING_LONG_SECONDS = 180
WATCHDOG_OFF = frozenset({"0", "false", "off", "no"})
DEFAULT_HEARTBEAT_MS = 60000


def start_watchdog(hook: Hook, session_id: str, interval_ms: Any = None) -> None:
    """Keep the session alive while its Claude Code process lives, and report it crashed
    within seconds when the process dies without a SessionEnd (``watchdog``)."""
    if os.environ.get("ORCHESTRATOR_WATCHDOG", "1").lower() in WATCHDOG_OFF:
        return
    entry = hook.state.mapped_session(hook.claude_session) or {}
    if not entry.get("agentPid") or entry.get("agentStarted") is None:
        return  # no process to follow: the next SessionStart notices a death instead
    from orchestrator_hook import watchdog

    interval = interval_ms if isinstance(interval_ms, int) and interval_ms > 0 \
        else DEFAULT_HEARTBEAT_MS
    key = lite.file_safe(hook.claude_session)
    watchdog.configure(str(hook.state.root), key, {
        "session": session_id, "claude": hook.claude_session, "pid": entry["agentPid"],
        "started": entry["agentStarted"], "url": hook.config.url, "token": hook.config.token,
        "project": hook.config.project_id or "", "interval": interval / 1000,
        "ca_file": hook.config.ca_file or "",
        "address": ipv4_address(hook.config.url),
        "python": sys.executable, "launcher": str(LAUNCHER),
        "project_dir": str(hook.project_dir)})
    if not watchdog.start(str(hook.state.root), key, sys.executable):
        hook.state.log("the watchdog could not be started")


def ipv4_address(url: str) -> str:
    """The service's IPv4 address, looked up here for the watchdog ("" if none)."""
    import socket
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url).hostname or ""
        return socket.getaddrinfo(host, None, socket.AF_INET)[0][4][0] if host else ""
    except (OSError, ValueError, IndexError):
        return ""


def stop_watchdog(hook: Hook, claude_session: str) -> None:
    from orchestrator_hook import watchdog

    watchdog.forget(str(hook.state.root), lite.file_safe(claude_session))


def crashed(hook: Hook) -> None:
    """``--crashed``: the watchdog saw this session's Claude Code process die without a
    SessionEnd. Record what it was doing, then report the crash (resume prompt ready for
    the next session), at once rather than after the crash threshold."""
    from orchestrator_hook import watchdog

    watchdog.cleanup(str(hook.state.root), lite.file_safe(hook.claude_session))
    entry = hook.state.mapped_session(hook.claude_session)
    if not entry or entry.get("ended") or not entry.get("sessionId"):
        return
    report_dead_session(hook, hook.claude_session)
    hook.service.send_quietly("check_recovery", {"crashedSessionIds": [entry["sessionId"]]})
    hook.state.update_session(hook.claude_session, ended=True, crashed=True)
    hook.state.forget_activity(hook.claude_session)


def report_dead_session(hook: Hook, claude_session: str) -> None:
    """Send what a dead session left: its unsent tool uses, and from its transcript the
    tool call that was running, the last request and the last answer."""
    entry = hook.state.mapped_session(claude_session) or {}
    session_id = flush_activity(hook, claude_session, heartbeat=False,
                                start_if_missing=False)
    if not session_id:
        return
    tail = with_remembered_turn(read_tail(entry.get("transcriptPath")), entry)
    parts: dict[str, Any] = {"detectedBy": "watchdog" if hook.event == "Crashed"
                             else "next SessionStart"}
    # The PreToolUse notes know; the transcript may not have caught up when it died.
    running = lite.tools_in_flight(hook.state.root, claude_session)
    if running:
        parts["toolInFlight"] = {"tool": running[-1]["tool"],
                                 "summary": running[-1]["summary"]}
    elif tail.tool_in_flight:
        parts["toolInFlight"] = tail.tool_in_flight
    if tail.user_prompts:
        parts["lastRequest"] = lite.clip(tail.user_prompts[-1], 1000)
    if tail.assistant_texts:
        parts["lastAnswer"] = lite.clip(tail.assistant_texts[-1], 2000)
    hook.service.send_quietly("append_session_event", {
        "sessionId": session_id, "type": "system_event", "role": "system",
        "content": "crash_report", "parts": parts})


def flush_activity(hook: Hook, claude_session: str, *, summary: str | None = None,
                   heartbeat: bool = True, start_if_missing: bool = True,
                   notices: bool = False) -> str | None:
    """Send the session's unsent tool uses with a heartbeat; returns the session id used.
    ``notices``: also take the session's pending notices into ``hook.notices`` (for a
    hook whose answer reaches the model)."""
    entry = hook.state.mapped_session(claude_session)
    if (not entry or entry.get("ended")) and claude_session == hook.claude_session:
        if not start_if_missing:
            return None
        start(hook, "implicit")  # hooks were installed mid-session, or the map was lost
        entry = hook.state.mapped_session(claude_session)
    if not entry or not entry.get("sessionId"):
        return None
    session_id = entry["sessionId"]
    uses = hook.state.take_activity(claude_session)
    hook.state.mark_flushed(claude_session)
    hook.state.compact_inflight(claude_session)
    batches = [uses[i:i + TOOL_USES_PER_CALL] for i in range(0, len(uses),
                                                               TOOL_USES_PER_CALL)] or [[]]
    for number, batch in enumerate(batches):
        arguments: dict[str, Any] = {"sessionId": session_id, "toolUses": batch,
                                     "heartbeat": heartbeat}
        last = number == len(batches) - 1
        if summary and last:
            arguments["conversationSummary"] = summary[:50000]
        if notices and last and heartbeat and claude_session == hook.claude_session:
            arguments["notices"] = True
        try:
            answer = hook.service.send("record_activity", arguments)
            if answer and isinstance(answer.get("notices"), list):
                hook.notices.extend(n for n in answer["notices"] if isinstance(n, str))
        except ToolRefused as exc:
            if exc.code in SESSION_GONE and heartbeat and claude_session == hook.claude_session:
                # Our orchestrator session was ended or marked crashed (a machine that
                # slept past the crash threshold): carry on in a fresh one.
                hook.state.log(f"session {session_id} is gone ({exc.code}); starting anew")
                start(hook, "restart")
                return hook.mapped_session_id()
            hook.state.log(f"record_activity refused: {exc}")
    return session_id


def flush_other_sessions(hook: Hook) -> None:
    """Tool uses left unsent by Claude sessions that are gone (killed, crashed)."""
    for claude_session in hook.state.sessions_with_activity():
        if claude_session != hook.claude_session and hook.service.remaining() > 0.5:
            flush_activity(hook, claude_session, heartbeat=False)


def tool_use_entry(hook: Hook, *, success: bool) -> dict[str, Any]:
    return lite.tool_use_entry(hook.payload, hook.project_dir, success=success)


def conversation_summary(hook: Hook) -> str:
    tail = read_tail(hook.payload.get("transcript_path"))
    last = hook.payload.get("last_assistant_message")
    if isinstance(last, str) and last.strip() and (not tail.assistant_texts
                                                   or tail.assistant_texts[-1] != last.strip()):
        tail.assistant_texts.append(last.strip())
    return tail.summary()


# -- small helpers -------------------------------------------------------------------------

def additional_context(text: str, *, system_message: str | None = None) -> dict[str, Any]:
    output: dict[str, Any] = {"hookSpecificOutput": {"hookEventName": "SessionStart",
                                                     "additionalContext": text}}
    if system_message:
        output["systemMessage"] = system_message
    return output


def new_session_id() -> str:
    """The service's own format: session-<ms>-<uuid4>. Made here, so that a
    start that waits in the spool and the calls queued after it name the same session.
    (uuid4 from os.urandom by hand: importing ``uuid`` costs a hook more than this.)"""
    raw = bytearray(os.urandom(16))
    raw[6] = (raw[6] & 0x0F) | 0x40
    raw[8] = (raw[8] & 0x3F) | 0x80
    h = raw.hex()
    return f"session-{int(time.time() * 1000)}-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def git_branch(start: Path) -> str | None:
    """The checked-out branch, read from .git/HEAD (no git process: hooks must be quick)."""
    directory = start
    for _ in range(30):
        dot_git = directory / ".git"
        try:
            if dot_git.is_file():  # a worktree or submodule: "gitdir: <path>"
                gitdir = dot_git.read_text().strip().removeprefix("gitdir:").strip()
                dot_git = (directory / gitdir).resolve()
            head = (dot_git / "HEAD").read_text().strip()
        except OSError:
            if directory.parent == directory:
                return None
            directory = directory.parent
            continue
        if head.startswith("ref: refs/heads/"):
            return head.removeprefix("ref: refs/heads/")
        return head[:12] or None  # detached HEAD
    return None


def dead_sessions(hook: Hook) -> list[str]:
    """Orchestrator sessions of this project whose Claude Code process is gone without a
    SessionEnd (killed, crashed): reported at once, instead of after the crash threshold.
    A pid that now belongs to another process (its start time differs) counts as gone."""
    mapped = read_json_dict(hook.state.sessions_path)
    dead = []
    for claude_session, entry in mapped.items():
        if (claude_session == hook.claude_session or not isinstance(entry, dict)
                or entry.get("ended") or not entry.get("sessionId") or not entry.get("agentPid")):
            continue
        started = process_start_time(entry["agentPid"])
        if started is None or started != entry.get("agentStarted"):
            dead.append(entry["sessionId"])
    return dead[-50:]


def crashed_claude_sessions(hook: Hook, session_ids: list[str]) -> list[str]:
    wanted = set(session_ids)
    return [claude for claude, entry in read_json_dict(hook.state.sessions_path).items()
            if isinstance(entry, dict) and entry.get("sessionId") in wanted]


def read_json_dict(path: Path) -> dict[str, Any]:
    data = read_json(path, {})
    return data if isinstance(data, dict) else {}


def process_start_time(pid: Any) -> int | None:
    """The process's start time in clock ticks since boot (/proc/PID/stat field 22), or
    None when no such process runs: with the pid, it names one process for good."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        return None if fields[0] in ("Z", "X") else int(fields[19])
    except (OSError, ValueError, IndexError):
        return None


def agent_process_id() -> int | None:
    """Claude Code's pid: the hook's parent, or its grandparent when a shell ran the hook."""
    try:
        pid = os.getppid()
        for _ in range(2):
            with open(f"/proc/{pid}/comm", encoding="utf-8") as handle:
                if handle.read().strip() not in SHELLS:
                    return pid
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        return pid
    except (OSError, ValueError, IndexError):
        return None


HANDLERS = {
    "Crashed": crashed,
    "SessionStart": session_start,
    "PostToolUse": post_tool_use,
    "PostToolUseFailure": post_tool_use,
    "UserPromptSubmit": user_prompt_submit,
    "Stop": stop,
    "StopFailure": stop_failure,
    "SubagentStart": subagent_event,
    "SubagentStop": subagent_event,
    "PreCompact": pre_compact,
    "PostCompact": post_compact,
    "SessionEnd": session_end,
}
