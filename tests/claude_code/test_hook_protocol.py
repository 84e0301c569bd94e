"""What the pinned Claude Code does with project hooks in ``-p`` mode, the facts the hook
client is built on: which events fire with which payload keys, and that a SessionStart
hook's ``additionalContext`` reaches the model. A recording hook of our own, no service."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.claude_code.installation import pinned_version
from tests.model_standins import ClaudeStandIn, call, say

pytestmark = pytest.mark.claude_code

RECORDED_EVENTS = ("SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse",
                   "PostToolUseFailure", "Stop", "PreCompact", "PostCompact", "SessionEnd")
RECORDER = "import sys; open(sys.argv[1], 'a').write(sys.stdin.read().strip() + '\\n')"
INJECT = ("import json; print(json.dumps({'hookSpecificOutput': {'hookEventName': "
          "'SessionStart', 'additionalContext': 'MARKER-FROM-SESSIONSTART'}}))")


def recording_settings(project: Path, log: Path) -> None:
    record = {"type": "command", "command": f"{sys.executable} -c \"{RECORDER}\" {log}"}
    inject = {"type": "command", "command": f"{sys.executable} -c \"{INJECT}\""}
    hooks = {event: [{"hooks": [record]}] for event in RECORDED_EVENTS}
    hooks["SessionStart"] = [{"hooks": [record, inject]}]
    (project / ".claude").mkdir(exist_ok=True)
    (project / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def recorded(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def test_pinned_version_is_installed(claude):
    assert claude.version.split()[0] == pinned_version()
    assert "Claude Code" in claude.version


def test_print_mode_fires_the_hooks_and_injects_session_start_context(claude, project,
                                                                      tmp_path):
    log = tmp_path / "hooks.jsonl"
    recording_settings(project, log)
    target = project / "notes.txt"
    steps = [call("Write", file_path=str(target), content="one\n"),
             call("Edit", file_path=str(target), old_string="one", new_string="two"),
             call("Bash", command="exit 3", description="fails on purpose"),
             say("All done.")]
    with ClaudeStandIn(steps) as model:
        run = claude.run(project, "write the notes", model.url)
    assert run.result["result"] == "All done."
    assert target.read_text() == "two\n"

    first = model.scripted_requests[0]
    assert "MARKER-FROM-SESSIONSTART" in first.text()
    events = [(e["hook_event_name"], e.get("source") or e.get("reason") or e.get("tool_name"))
              for e in recorded(log)]
    assert events == [("SessionStart", "startup"), ("UserPromptSubmit", None),
                      ("PreToolUse", "Write"), ("PostToolUse", "Write"),
                      ("PreToolUse", "Edit"), ("PostToolUse", "Edit"),
                      ("PreToolUse", "Bash"), ("PostToolUseFailure", "Bash"),
                      ("Stop", None), ("SessionEnd", "other")]
    assert {e["session_id"] for e in recorded(log)} == {run.session_id}
    edit = next(e for e in recorded(log) if e.get("tool_name") == "Edit"
                and e["hook_event_name"] == "PostToolUse")
    assert edit["tool_input"]["file_path"] == str(target)
    assert edit["cwd"] == str(project)


def test_resume_and_compact_fire_their_hooks(claude, project, tmp_path):
    log = tmp_path / "hooks.jsonl"
    recording_settings(project, log)
    steps = [*(call("Bash", command=f"echo {n}", description="count") for n in range(3)),
             say("First answer.")]
    with ClaudeStandIn(steps, compact_summary="SUMMARY-MARKER-9") as model:
        first = claude.run(project, "count to three", model.url)
        log.write_text("")
        compact = claude.run(project, "/compact", model.url, resume=first.session_id)
    assert compact.session_id == first.session_id
    assert [r.kind for r in model.requests] == ["agent"] * 4 + ["compaction"]
    events = recorded(log)
    assert [(e["hook_event_name"], e.get("source") or e.get("trigger") or e.get("reason"))
            for e in events] == [("SessionStart", "resume"), ("PreCompact", "manual"),
                                 ("SessionStart", "compact"), ("PostCompact", "manual"),
                                 ("SessionEnd", "other")]
    assert {e["session_id"] for e in events} == {first.session_id}
    assert "SUMMARY-MARKER-9" in events[3]["compact_summary"]
