"""OpenAI Codex CLI (hooks in ``<repo>/.codex/hooks.json``).

Its events map one to one but for compaction: Codex fires PreCompact, PostCompact, then
SessionStart with ``source: compact``; the handlers re-inject the context on
SessionStart(compact) and then report the compaction complete, so Codex's SessionStart
(compact) runs both and its PostCompact does nothing. Edits go through ``apply_patch``,
whose patch text (``tool_input.command``) names the files; shell commands reach hooks as
``Bash``. Answers: ``hookSpecificOutput.additionalContext`` on SessionStart,
UserPromptSubmit, PreToolUse and PostToolUse reaches the model as a developer message;
a PreToolUse ``permissionDecision: deny`` keeps the files unchanged and the model reads
the reason (Codex appends the raw patch to it).
"""

from __future__ import annotations

from orchestrator_hook import agents

KIND = agents.CODEX
EDIT_TOOLS = frozenset({"apply_patch"})
# Native event -> hook timeout in seconds (SessionEnd: Codex clamps it to 3 s anyway).
HOOK_EVENTS = {"SessionStart": 15, "UserPromptSubmit": 5, "PreToolUse": 5,
               "PostToolUse": 10, "PreCompact": 10, "PostCompact": 10, "Stop": 10,
               "SessionEnd": 3}
CONTEXT_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"})


def normalise(payload: dict) -> dict:
    normal = {**payload, "agent_kind": KIND}
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") in EDIT_TOOLS and isinstance(tool_input, dict):
        normal["tool_input"] = {**tool_input,
                                "file_paths": agents.patch_paths(tool_input.get("command"))}
    return normal


def failed(payload: dict) -> bool:
    """apply_patch reports ``Exit code: N`` first; a shell's output carries no status."""
    response = payload.get("tool_response")
    if isinstance(response, str) and response.startswith("Exit code: "):
        return not response.startswith("Exit code: 0\n")
    return False


def translate(event: str, payload: dict) -> list[tuple[str, dict]]:
    normal = normalise(payload)
    if event == "SessionStart":
        if normal.get("source") == "compact":
            return [(agents.SESSION_START, normal), (agents.COMPACT_AFTER, normal)]
        return [(agents.SESSION_START, normal)]
    if event == "UserPromptSubmit":
        return [(agents.PROMPT, normal)]
    if event == "PreToolUse":
        edit = normal.get("tool_name") in EDIT_TOOLS
        return [(agents.BEFORE_EDIT if edit else agents.BEFORE_TOOL, normal)]
    if event == "PostToolUse":
        if failed(normal):
            normal["error"] = str(normal.get("tool_response"))[:300]
            return [(agents.AFTER_TOOL_FAILED, normal)]
        return [(agents.AFTER_TOOL, normal)]
    if event == "PreCompact":
        return [(agents.COMPACT_BEFORE, normal)]
    if event == "Stop":
        return [(agents.TURN_END, normal)]
    if event == "SessionEnd":
        return [(agents.SESSION_END, normal)]
    return []  # PostCompact (see above), and events we do not register


def answer(event: str, results: list[tuple[str, dict, object]]) -> dict | None:
    for _, _, output in results:
        reason = agents.denial_of(output)
        if reason is not None and event == "PreToolUse":
            return {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                           "permissionDecision": "deny",
                                           "permissionDecisionReason": reason}}
    text = "\n\n".join(t for t in (agents.context_of(o) for _, _, o in results) if t)
    if text and event in CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return None
