"""One event model for every coding agent, and an adapter per agent kind.

The hook client does the same things for every agent: start a session (with how it
started), note a prompt, check a file before an edit, record tool calls, send a summary at
the end of a turn, count compactions, end the session with a handoff note. Each agent
names those moments and shapes their payloads its own way, and reads answers its own
way. An adapter (``claude_code``, ``codex``, ``gemini``) translates one native hook call
into canonical events (below) with a normalised payload, and the handlers' canonical
answer (``{"context": text}`` to inject, ``{"deny": reason}`` to refuse a tool) into that
agent's output.

The normalised payload is Claude Code's shape, because the handlers were written for it
and Claude Code needs no translation: ``session_id``, ``cwd``, ``transcript_path``,
``source``, ``prompt``, ``tool_name``, ``tool_input`` (with ``file_path`` or
``file_paths`` for an edit), ``tool_use_id``, ``trigger``, ``reason``,
``last_assistant_message``; plus ``agent_kind``.

Liveness never depends on an end hook: the watchdog follows the agent's process (the
hook's parent, ``handlers.agent_process_id``) and every event is a heartbeat.

Standard library only, and cheap to import: every hook imports this package.
"""

from __future__ import annotations

# Canonical events. The value is the handler's event name (handlers.HANDLERS, cli.BUDGET_
# SECONDS): the handlers were Claude Code's first, so they kept its names.
SESSION_START = "SessionStart"      # payload: source (startup, resume, clear, compact)
PROMPT = "UserPromptSubmit"         # payload: prompt
BEFORE_EDIT = "PreEdit"             # payload: tool_name, tool_input with the edited paths
BEFORE_TOOL = "PreToolUse"          # any other tool, before it runs
AFTER_TOOL = "PostToolUse"          # a tool call that succeeded
AFTER_TOOL_FAILED = "PostToolUseFailure"
TURN_END = "Stop"                   # payload: last_assistant_message
COMPACT_BEFORE = "PreCompact"       # payload: trigger
COMPACT_AFTER = "PostCompact"       # after SessionStart(source compact) re-injected context
SESSION_END = "SessionEnd"          # payload: reason

CANONICAL = (SESSION_START, PROMPT, BEFORE_EDIT, BEFORE_TOOL, AFTER_TOOL, AFTER_TOOL_FAILED,
             TURN_END, COMPACT_BEFORE, COMPACT_AFTER, SESSION_END)

CLAUDE_CODE, CODEX, GEMINI = "claude-code", "codex", "gemini"
KINDS = (CLAUDE_CODE, CODEX, GEMINI)
LABELS = {CLAUDE_CODE: "Claude Code", CODEX: "Codex CLI", GEMINI: "Gemini CLI"}


def label(kind: object) -> str:
    return LABELS.get(str(kind or CLAUDE_CODE), str(kind))


def adapter(kind: str):  # -> module with translate() and answer()
    """The adapter module of an agent kind (ValueError for an unknown one)."""
    if kind == CODEX:
        from orchestrator_hook.agents import codex
        return codex
    if kind == GEMINI:
        from orchestrator_hook.agents import gemini
        return gemini
    if kind == CLAUDE_CODE:
        from orchestrator_hook.agents import claude_code
        return claude_code
    raise ValueError(f"unknown agent kind {kind!r}: one of {', '.join(KINDS)}")


def context_of(output: object) -> str:
    """The text a handler's answer injects (Claude Code's ``additionalContext``), or ""."""
    specific = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    text = specific.get("additionalContext") if isinstance(specific, dict) else None
    return text if isinstance(text, str) else ""


def denial_of(output: object) -> str | None:
    """The reason of a handler's refusal (Claude Code's PreToolUse deny), or None."""
    specific = output.get("hookSpecificOutput") if isinstance(output, dict) else None
    if isinstance(specific, dict) and specific.get("permissionDecision") == "deny":
        return str(specific.get("permissionDecisionReason") or "refused")
    return None


def patch_paths(patch: object) -> list[str]:
    """The files a Codex ``apply_patch`` names (``*** Update File: P``, ``*** Add File: P``,
    ``*** Delete File: P``, and the target of ``*** Move to: P``), in order, once each."""
    if not isinstance(patch, str):
        return []
    paths: list[str] = []
    for line in patch.splitlines():
        for marker in ("*** Update File:", "*** Add File:", "*** Delete File:",
                       "*** Move to:"):
            if line.startswith(marker):
                path = line[len(marker):].strip()
                if path and path not in paths:
                    paths.append(path)
    return paths
