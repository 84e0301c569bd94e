"""Resume prompts in the markdown every client expects (the spec's template, headings
unchanged), with actions derived from state."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.utils.dateparse import parse_datetime

from contexts.models import TaskContext
from contexts.services.representation import task_part

PROMPT_TOOL_USES = 5
# Tools whose file paths are edits (Read, Grep and Bash touch nothing named): Claude Code's,
# Codex CLI's apply_patch and Gemini CLI's replace / write_file (the client's agent adapters
# name the files in filePaths the same way for all of them).
EDITING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "replace",
                      "write_file"})
SUBAGENT_PREFIX = re.compile(r"^\(subagent [^)]*\) ")
_DATETIME_COLUMNS = ("created_at", "updated_at", "last_session_at")


def task_from_row(row: dict[str, Any] | None) -> dict[str, Any] | None:
    """The camelCase task of a snapshot holding a task_contexts row (``to_jsonb(t)``).

    Snapshots keep the row exactly as the database had it (like context_versions.snapshot);
    this turns it into the shape every answer uses.
    """
    if not isinstance(row, dict) or not row.get("task_id"):
        return None
    names = {f.name for f in TaskContext._meta.get_fields()}
    values = {k: v for k, v in row.items() if k in names}
    for column in _DATETIME_COLUMNS:
        if isinstance(values.get(column), str):
            values[column] = parse_datetime(values[column])
    if values.get("score") is not None:
        values["score"] = Decimal(str(values["score"]))
    return task_part(TaskContext(**values))


@dataclass
class RecoveryState:
    session_id: str
    recovery_type: str
    last_activity: str | None
    task: dict[str, Any] | None
    tool_history: list[dict[str, Any]] = field(default_factory=list)  # newest first
    unsaved_changes: list[dict[str, Any]] = field(default_factory=list)
    conversation_summary: str | None = None
    compaction_count: int = 0
    git_branch: str | None = None
    # Orphaned work: unfinished tasks this session worked on that no live session took over.
    orphaned_tasks: list[dict[str, Any]] = field(default_factory=list)
    # What the client saw when the agent's process died (its crash_report event): the tool
    # call that was running, the last request and the last answer.
    crash_report: dict[str, Any] = field(default_factory=dict)

    @property
    def full_reload_due(self) -> bool:
        # Compactions 2, 4, 6, ... need the whole plan re-read: each loses more of it.
        return self.compaction_count > 0 and self.compaction_count % 2 == 0


def _text(value: Any, empty: str = "") -> str:
    return str(value) if value not in (None, "") else empty


def _field(label: str, value: Any) -> list[str]:
    """One "- **Label**: value" line, or none when nothing is known (no "(not set)")."""
    text = " ".join(str(value).split()) if value not in (None, "") else ""
    return [f"- **{label}**: {text}"] if text else []


def in_flight(state: RecoveryState) -> str | None:
    """The tool call that was running when the agent died, as "`Tool` what"."""
    running = state.crash_report.get("toolInFlight")
    if not isinstance(running, dict) or not running.get("tool"):
        return None
    summary = str(running.get("summary") or "")
    tool = str(running["tool"])
    what = summary[len(tool):].strip() if summary.startswith(tool) else summary
    return f"`{tool}` {what}".strip()


def _derived(state: RecoveryState) -> dict[str, str]:
    """Working-on, last action and next step from what the session did, for a task whose
    context does not say."""
    uses = [u for u in state.tool_history if u.get("summary")]

    def target(use: dict[str, Any]) -> str:  # "Edit src/a.py" -> "src/a.py"
        return SUBAGENT_PREFIX.sub("", str(use["summary"])).split(" ", 1)[-1]

    edits = []
    for use in uses:
        if use.get("tool") in EDITING_TOOLS and target(use) not in edits:
            edits.append(target(use))
    derived = {}
    if edits:
        derived["workingOn"] = "files edited last: " + ", ".join(edits[:5])
    if uses:
        derived["lastAction"] = f"`{uses[0]['tool']}` {target(uses[0])}"
    running = in_flight(state)
    if running:
        derived["nextStep"] = f"find out whether {running} finished, then carry on"
    return derived


def resume_prompt(state: RecoveryState) -> str:
    task = state.task or {}
    context = task.get("immediateContext") or {}
    derived = _derived(state)
    blockers = [b for b in context.get("blockers") or [] if b]
    lines = [f"## Recovery Required: {state.recovery_type}", "",
             f"### Task: {_text(task.get('name'), '(no task)')}"]
    lines += _field("Phase", task.get("currentPhase"))
    if task:
        lines += _field("Iteration", task.get("iteration") or 0)
    stopped = [*_field("Running", in_flight(state) and f"{in_flight(state)} (interrupted)"),
               *_field("Last request", state.crash_report.get("lastRequest")),
               *_field("Last answer", state.crash_report.get("lastAnswer"))]
    if stopped:
        lines += ["", "### When It Stopped", *stopped]
    lines += ["", "### Immediate Context",
              *_field("Working On", context.get("workingOn") or derived.get("workingOn")),
              *_field("Last Action", context.get("lastAction") or derived.get("lastAction")),
              *_field("Next Step", context.get("nextStep") or derived.get("nextStep")),
              f"- **Blockers**: {', '.join(blockers) if blockers else 'none'}",
              "", "### Recent Tool Usage"]
    uses = state.tool_history[:PROMPT_TOOL_USES]
    lines += [f"- {u['timestamp']} `{u['tool']}` ({'ok' if u['success'] else 'failed'})"
              + (f": {u['summary']}" if u.get("summary") else "")
              for u in uses] or ["- (no tool usage recorded)"]
    if state.unsaved_changes:
        lines += ["", "### Pending Changes"]
        lines += [f"- **{_text(c.get('type'), 'change')}** `{_text(c.get('path'), '?')}`: "
                  f"{_text(c.get('description'))}".rstrip(": ")
                  for c in state.unsaved_changes]
    if state.conversation_summary:
        lines += ["", "### Conversation Summary", state.conversation_summary.strip()]
    lines += ["", "### Recommended Actions"]
    lines += [f"{n}. {action}" for n, action in enumerate(recommended_actions(state), 1)]
    return "\n".join(lines) + "\n"


def recommended_actions(state: RecoveryState) -> list[str]:
    """What to do first, in order, from what the state shows (never fixed text)."""
    task = state.task or {}
    context = task.get("immediateContext") or {}
    blockers = [b for b in context.get("blockers") or [] if b]
    actions: list[str] = []
    if state.recovery_type == "compaction":
        if state.full_reload_due:
            actions.append(f"Full plan reload due (compaction #{state.compaction_count}): "
                           "re-read the complete plan, re-check completed and in-progress "
                           "tasks against it and rebuild the blocked-task graph.")
        else:
            actions.append(f"Read the plan summary and this task's context (compaction "
                           f"#{state.compaction_count}; the next one requires a full plan "
                           "reload).")
    elif state.recovery_type == "crash":
        branch = f" on branch {state.git_branch}" if state.git_branch else ""
        actions.append(f"Check the working tree{branch} (git status, diff): the session "
                       f"stopped responding after {_text(state.last_activity, 'an unknown time')}.")
        running = in_flight(state)
        if running:
            actions.append(f"{running} was running when the session died: its output is "
                           "lost; check what it changed before running it again.")
    if state.orphaned_tasks:
        names = ", ".join(f"`{t['taskId']}` ({t['name']})" for t in state.orphaned_tasks)
        actions.append(f"Orphaned work: {names} has no live session since this one "
                       "crashed; take it over (start_session or switch_task with its taskId) "
                       "or hand it back.")
    if blockers:
        actions.append("Resolve the blockers first: " + "; ".join(blockers) + ".")
    if state.unsaved_changes:
        paths = ", ".join(_text(c.get("path"), "?") for c in state.unsaved_changes[:10])
        actions.append(f"Re-apply or verify the {len(state.unsaved_changes)} pending "
                       f"change(s) that were never saved: {paths}.")
    failed = [u for u in state.tool_history[:PROMPT_TOOL_USES] if not u["success"]]
    if failed:
        actions.append(f"The last `{failed[0]['tool']}` call failed at {failed[0]['timestamp']}:"
                       " check why before repeating it.")
    if not task:
        actions.append("No task was recorded for this session: pick one (get_task_graph "
                       "lists ready tasks) and switch_task to it.")
    elif context.get("nextStep") and not blockers:
        actions.append(f"Continue task {task.get('taskId')} with its next step: "
                       f"{context['nextStep']}")
    elif not context.get("nextStep"):
        # Both names: an agent's tool list (/mcp/agent) has get_task_context, the full
        # one (/mcp, REST) get_unified_context.
        actions.append(f"Reload task {task.get('taskId')} (get_task_context, or "
                       "get_unified_context) and decide its next step; none was recorded.")
    if not state.conversation_summary and not state.crash_report.get("lastRequest"):
        actions.append("No conversation summary was saved: rebuild it from the task's "
                       "technical decisions and recent versions.")
    # Agent-neutral: the crashed session may be Claude Code's, Codex's or Gemini CLI's,
    # and every one of their hook clients marks it recovered at the next session start.
    actions.append("Once resumed, the crash is marked recovered: by the agent's orchestrator "
                   "hooks when a session of this task starts, otherwise with check_recovery "
                   f"{{\"markRecovered\": \"{state.session_id}\"}}.")
    return actions
