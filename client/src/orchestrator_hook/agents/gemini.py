"""Google Gemini CLI (hooks in ``<repo>/.gemini/settings.json``).

SessionStart, BeforeAgent (the prompt), BeforeTool / AfterTool (edits through ``replace``
and ``write_file``, shell through ``run_shell_command``), AfterAgent (turn end, with the
answer as ``prompt_response``) and SessionEnd map one to one. PreCompress is not
registered: 0.61 fires it before every model call, compressing or not. Its tool events
carry no call id: one is made from the tool's name and input, which BeforeTool and
AfterTool of one call share.

Answers: ``hookSpecificOutput.additionalContext`` lands as ``<hook_context>`` in the
prompt (SessionStart, BeforeAgent) or in the tool's result (AfterTool); BeforeTool has no
context of its own, so a warning from the check before an edit is kept and said in that
edit's AfterTool (the claim and the conflict are recorded before the edit; the model
reads the warning with its result). BeforeTool ``{"decision": "deny", "reason"}`` refuses
the edit and the model reads the reason.
"""

from __future__ import annotations

import json
import os
import zlib

from orchestrator_hook import agents, lite

KIND = agents.GEMINI
EDIT_TOOLS = frozenset({"replace", "write_file"})
# Native event -> hook timeout in seconds (the settings file takes milliseconds).
HOOK_EVENTS = {"SessionStart": 15, "BeforeAgent": 5, "BeforeTool": 5, "AfterTool": 10,
               "AfterAgent": 10, "SessionEnd": 3}
CONTEXT_EVENTS = frozenset({"SessionStart", "BeforeAgent", "AfterTool"})


def call_id(payload: dict) -> str:
    """The same for BeforeTool and AfterTool of one call (Gemini sends no id)."""
    text = json.dumps([payload.get("tool_name"), payload.get("tool_input")], sort_keys=True)
    return f"gemini-{zlib.crc32(text.encode()):08x}-{len(text)}"


def user_text(prompt: object) -> object:
    """The prompt without the ``<hook_context>`` blocks Gemini CLI put into it (the
    SessionStart context is prepended to the first prompt)."""
    if not isinstance(prompt, str) or "<hook_context>" not in prompt:
        return prompt
    kept, rest = [], prompt
    while "<hook_context>" in rest:
        before, _, after = rest.partition("<hook_context>")
        kept.append(before)
        rest = after.partition("</hook_context>")[2]
    return "".join([*kept, rest]).strip()


def normalise(payload: dict) -> dict:
    normal = {**payload, "agent_kind": KIND}
    if "prompt" in payload:
        normal["prompt"] = user_text(payload["prompt"])
    if "tool_name" in payload:
        normal["tool_use_id"] = call_id(payload)
    return normal


def translate(event: str, payload: dict) -> list[tuple[str, dict]]:
    normal = normalise(payload)
    if event == "SessionStart":
        return [(agents.SESSION_START, normal)]
    if event == "BeforeAgent":
        return [(agents.PROMPT, normal)]
    if event == "BeforeTool":
        edit = normal.get("tool_name") in EDIT_TOOLS
        return [(agents.BEFORE_EDIT if edit else agents.BEFORE_TOOL, normal)]
    if event == "AfterTool":
        response = normal.get("tool_response")
        error = response.get("error") if isinstance(response, dict) else None
        if error:
            normal["error"] = json.dumps(error)[:300] if not isinstance(error, str) else error
            return [(agents.AFTER_TOOL_FAILED, normal)]
        return [(agents.AFTER_TOOL, normal)]
    if event == "AfterAgent":
        normal["last_assistant_message"] = normal.get("prompt_response")
        return [(agents.TURN_END, normal)]
    if event == "SessionEnd":
        return [(agents.SESSION_END, normal)]
    return []


def _held_warning(payload: dict) -> str:
    root = lite.state_root(str(lite.project_dir_of(payload)))
    return lite.activity_file(root, lite.claude_session_of(payload), ".warning")


def answer(event: str, results: list[tuple[str, dict, object]]) -> dict | None:
    for _, _, output in results:
        reason = agents.denial_of(output)
        if reason is not None and event == "BeforeTool":
            return {"decision": "deny", "reason": reason}
    texts = [t for t in (agents.context_of(o) for _, _, o in results) if t]
    if event == "BeforeTool":
        if texts and results:  # said with this edit's result (AfterTool)
            path = _held_warning(results[0][1])
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("\n\n".join(texts) + "\n\n")
        return None
    if event == "AfterTool" and results:
        path = _held_warning(results[0][1])
        try:
            with open(path, encoding="utf-8") as handle:
                held = handle.read().strip()
            os.unlink(path)
        except OSError:
            held = ""
        if held:
            texts.insert(0, held)
    text = "\n\n".join(texts)
    if text and event in CONTEXT_EVENTS:
        return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return None
