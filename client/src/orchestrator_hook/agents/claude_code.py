"""Claude Code: the canonical events are its own hook events, its payloads the canonical
payload, and the handlers answer in its output format, so this adapter passes through.

Its hooks (``install.HOOK_EVENTS``) run ``launch.py EVENT`` without ``--agent``; the edit
check is a second synchronous PreToolUse group for Edit|Write|MultiEdit|NotebookEdit
whose command names the canonical ``PreEdit``.
"""

from __future__ import annotations

from orchestrator_hook import agents

KIND = agents.CLAUDE_CODE


def translate(event: str, payload: dict) -> list[tuple[str, dict]]:
    return [(event, payload)]


def answer(event: str, results: list[tuple[str, dict, object]]) -> dict | None:
    """The last handler answer there is, as the handler gave it."""
    for _, _, output in reversed(results):
        if output:
            return output  # type: ignore[return-value]
    return None
