"""What the transcript holds that the orchestrator lacks: the last prompts, answers and
tool actions, read from the tail of Claude Code's JSONL transcript.

The transcript is written asynchronously and may lag the current turn (PROTOCOL.md 2),
and its line format is not a documented contract: everything here is best effort and
tolerates lines it does not understand.
"""

from __future__ import annotations

import json
import os

from orchestrator_hook.lite import clip, describe_tool_use

# typing only for the annotations (never evaluated): importing it costs every hook.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TAIL_BYTES", "TranscriptTail", "describe_tool_use", "read_tail"]

TAIL_BYTES = 512 * 1024


class TranscriptTail:
    # A plain class: ``dataclasses`` imports ``inspect``, which costs every hook.
    def __init__(self) -> None:
        self.user_prompts: list[str] = []
        self.assistant_texts: list[str] = []
        self.tool_actions: list[str] = []
        # tool_use id -> (tool name, what it did) of calls with no result yet: the one
        # left when Claude Code died was running.
        self.pending: dict[str, tuple[str, str]] = {}

    @property
    def tool_in_flight(self) -> dict[str, str] | None:
        """The last tool call the transcript shows no result for, if any."""
        if not self.pending:
            return None
        name, action = list(self.pending.values())[-1]
        return {"tool": name, "summary": action}

    def summary(self, limit: int = 4000) -> str:
        parts = []
        if self.user_prompts:
            parts.append("Last requests: " + " | ".join(clip(p, 400)
                                                        for p in self.user_prompts[-3:]))
        if self.assistant_texts:
            parts.append("Last answer: " + clip(self.assistant_texts[-1], 1500))
        if self.tool_actions:
            parts.append("Last tool actions: " + "; ".join(self.tool_actions[-10:]))
        return clip("\n".join(parts), limit)


def read_tail(path: str | None) -> TranscriptTail:
    tail = TranscriptTail()
    if not path:
        return tail
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - TAIL_BYTES))
            data = handle.read()
    except OSError:
        return tail
    for raw in data.splitlines():
        try:
            line = json.loads(raw)
        except ValueError:
            continue  # the first line of a tail is usually cut
        if isinstance(line, dict):
            _take(line, tail)
    return tail


def _take(line: dict[str, Any], tail: TranscriptTail) -> None:
    message = line.get("message")
    if not isinstance(message, dict):
        return
    role, content = message.get("role"), message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
            text = block["text"].strip()
            if role == "user" and not text.startswith("<"):  # skip injected reminders
                tail.user_prompts.append(text)
            elif role == "assistant":
                tail.assistant_texts.append(text)
        elif kind == "tool_use" and role == "assistant":
            action = describe_tool_use(str(block.get("name")), block.get("input"))
            tail.tool_actions.append(action)
            if isinstance(block.get("id"), str):
                tail.pending[block["id"]] = (str(block.get("name")), action)
        elif kind == "tool_result" and isinstance(block.get("tool_use_id"), str):
            tail.pending.pop(block["tool_use_id"], None)
