"""The agent adapters on the real payloads Codex CLI 0.171 and Gemini CLI 0.61 sent
(payloads/, recorded from the binaries with a logging hook), and the setup's merging.
No binary and no server: the suites test_codex / test_gemini run the real ones."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from orchestrator_hook import agents
from orchestrator_hook.agents import claude_code, codex, gemini, setup

PAYLOADS = Path(__file__).resolve().parent / "payloads"


def payload(kind: str, name: str) -> dict:
    return json.loads((PAYLOADS / kind / f"{name}.json").read_text())


@pytest.mark.parametrize(("name", "expected"), [
    ("SessionStart", [agents.SESSION_START]),
    ("SessionStart.compact", [agents.SESSION_START, agents.COMPACT_AFTER]),
    ("UserPromptSubmit", [agents.PROMPT]),
    ("PreToolUse.apply_patch", [agents.BEFORE_EDIT]),
    ("PreToolUse.Bash", [agents.BEFORE_TOOL]),
    ("PostToolUse.apply_patch", [agents.AFTER_TOOL]),
    ("PostToolUse.Bash", [agents.AFTER_TOOL]),
    ("PreCompact", [agents.COMPACT_BEFORE]),
    ("PostCompact", []),
    ("Stop", [agents.TURN_END]),
    ("SessionEnd", [agents.SESSION_END]),
])
def test_codex_events_map_to_canonical_ones(name, expected):
    native = payload("codex", name)
    events = codex.translate(native["hook_event_name"], native)
    assert [event for event, _ in events] == expected
    for _, normal in events:
        assert normal["agent_kind"] == "codex" and normal["session_id"] == native["session_id"]


def test_a_codex_patch_names_its_files():
    native = payload("codex", "PreToolUse.apply_patch")
    ((_, normal),) = codex.translate("PreToolUse", native)
    assert normal["tool_input"]["file_paths"] == ["shared.py"]
    assert agents.patch_paths("*** Begin Patch\n*** Add File: a.py\n+x\n*** Delete File: b.py\n"
                              "*** Update File: c.py\n*** Move to: d.py\n@@\n-a\n+b\n"
                              "*** Update File: a.py\n*** End Patch\n") == [
        "a.py", "b.py", "c.py", "d.py"]
    failed = {**payload("codex", "PostToolUse.apply_patch"),
              "tool_response": "Exit code: 1\nWall time: 0 seconds\nOutput:\nverification failed"}
    assert [e for e, _ in codex.translate("PostToolUse", failed)] == [agents.AFTER_TOOL_FAILED]


def test_codex_answers():
    warn = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "W"}}
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": "deny",
                                   "permissionDecisionReason": "R"}}
    assert codex.answer("PreToolUse", [("PreEdit", {}, warn)]) == warn
    assert codex.answer("PreToolUse", [("PreEdit", {}, deny)]) == deny
    start = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "C"},
             "systemMessage": "for Claude Code's user"}
    assert codex.answer("SessionStart", [("SessionStart", {}, start),
                                         ("PostCompact", {}, None)]) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": "C"}}
    assert codex.answer("Stop", [("Stop", {}, None)]) is None


@pytest.mark.parametrize(("name", "expected"), [
    ("SessionStart", [agents.SESSION_START]),
    ("BeforeAgent", [agents.PROMPT]),
    ("BeforeTool.replace", [agents.BEFORE_EDIT]),
    ("BeforeTool.run_shell_command", [agents.BEFORE_TOOL]),
    ("AfterTool.replace", [agents.AFTER_TOOL]),
    ("AfterTool.run_shell_command", [agents.AFTER_TOOL]),
    ("AfterAgent", [agents.TURN_END]),
    ("PreCompress", []),  # fires before every model call in 0.61: not a compaction
    ("BeforeModel", []),
    ("SessionEnd", [agents.SESSION_END]),
])
def test_gemini_events_map_to_canonical_ones(name, expected):
    native = payload("gemini", name)
    events = gemini.translate(native["hook_event_name"], native)
    assert [event for event, _ in events] == expected


def test_gemini_gets_a_call_id_and_its_prompt_without_injected_context():
    before = gemini.translate("BeforeTool", payload("gemini", "BeforeTool.replace"))[0][1]
    after = gemini.translate("AfterTool", payload("gemini", "AfterTool.replace"))[0][1]
    assert before["tool_use_id"] == after["tool_use_id"]
    other = gemini.translate("BeforeTool", payload("gemini", "BeforeTool.run_shell_command"))
    assert other[0][1]["tool_use_id"] != before["tool_use_id"]
    prompt = gemini.translate("BeforeAgent", payload("gemini", "BeforeAgent"))[0][1]["prompt"]
    assert prompt == "Edit shared.py so that greet() says 'Hello, <name>', then run python3 app.py."
    turn = gemini.translate("AfterAgent", payload("gemini", "AfterAgent"))[0][1]
    assert turn["last_assistant_message"].startswith("Edited shared.py")


def test_gemini_answers_a_deny_and_keeps_a_warning_for_the_edits_result(tmp_path):
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse",
                                   "permissionDecision": "deny",
                                   "permissionDecisionReason": "R"}}
    normal = {"cwd": str(tmp_path), "session_id": "s1"}
    assert gemini.answer("BeforeTool", [("PreEdit", normal, deny)]) == {
        "decision": "deny", "reason": "R"}
    warn = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "W"}}
    assert gemini.answer("BeforeTool", [("PreEdit", normal, warn)]) is None
    said = gemini.answer("AfterTool", [("PostToolUse", normal, None)])
    assert said == {"hookSpecificOutput": {"hookEventName": "AfterTool",
                                           "additionalContext": "W"}}
    assert gemini.answer("AfterTool", [("PostToolUse", normal, None)]) is None  # said once


def test_claude_code_passes_through():
    output = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "W"}}
    assert claude_code.translate("PreEdit", {"a": 1}) == [("PreEdit", {"a": 1})]
    assert claude_code.answer("PreEdit", [("PreEdit", {}, output)]) is output
    with pytest.raises(ValueError):
        agents.adapter("aider")


def test_setup_merges_and_never_clobbers(tmp_path):
    runner = ["/usr/bin/python3", "-S", "/x/orchestrator_hook/launch.py"]
    theirs = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify-me"}]}]},
              "model": {"name": "gemini-2.5-pro"}}
    once = setup.merge_hooks(theirs, runner, "gemini", gemini.HOOK_EVENTS, 1000)
    twice = setup.merge_hooks(once, runner, "gemini", gemini.HOOK_EVENTS, 1000)
    assert once == twice and once["model"] == theirs["model"]
    assert [h["command"] for g in once["hooks"]["Stop"] for h in g["hooks"]] == ["notify-me"]
    assert once["hooks"]["AfterAgent"][0]["hooks"][0]["timeout"] == 10000
    assert once["hooks"]["AfterAgent"][0]["hooks"][0]["command"].endswith(
        "launch.py --agent gemini AfterAgent")

    toml = ('model = "o3"\n[mcp_servers.other]\nurl = "http://x"\n'
            '[mcp_servers.orchestrator]\nurl = "http://old"\n[mcp_servers.orchestrator.env]\n'
            'A = "1"\n[profiles.fast]\nmodel = "o4"\n')
    section = setup.codex_mcp_section("http://new:8000", "github.com:acme:shop")
    merged = setup.merge_toml_section(toml, "mcp_servers.orchestrator", section)
    assert setup.merge_toml_section(merged, "mcp_servers.orchestrator", section) == merged
    data = tomllib.loads(merged)
    assert data["model"] == "o3" and data["profiles"]["fast"]["model"] == "o4"
    assert data["mcp_servers"]["other"]["url"] == "http://x"
    assert data["mcp_servers"]["orchestrator"] == {
        "url": "http://new:8000/mcp/agent", "bearer_token_env_var": "ORCHESTRATOR_TOKEN",
        "http_headers": {"X-Orchestrator-Project": "github.com:acme:shop"}}
