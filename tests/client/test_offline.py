"""The hook client with the service down: never in the way, nothing lost.

These run the command ``manage.py claude_setup`` installs as Claude Code does (through
``sh -c``), on the protocol fixtures, against a real port with nothing listening.
"""

from __future__ import annotations

import json
import subprocess

from orchestrator_hook.context import save_mirror
from tests.client.conftest import FIXTURES, HOOK, fixture, hook_argv

SESSION = "11111111-1111-4111-8111-111111111111"


def test_every_fixture_exits_zero_quickly_and_prints_only_json(offline_project):
    for path in sorted(FIXTURES.glob("*.json")):
        payload = json.loads(path.read_text())
        run = offline_project.hook(payload["hook_event_name"], payload)
        assert run.returncode == 0, (path.name, run.stderr)
        assert run.seconds < 3, (path.name, run.seconds)
        if run.stdout.strip():
            assert run.output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        assert "Traceback" not in run.stderr + offline_project.log(), path.name


def test_session_start_offline_injects_the_local_copy_with_a_note(offline_project):
    save_mirror(offline_project.root, sessionId="session-1-old", taskId="feature-x",
                contextBundle={"taskId": "feature-x", "text": "HOT: finish the login form"},
                handoff={"summary": "Login form half done", "openItems": ["tests"],
                         "fromSessionId": "session-1-old", "createdAt": "2026-11-22T10:00:00Z"})
    run = offline_project.hook("SessionStart", fixture("session_start_startup"))
    assert run.returncode == 0
    assert run.context.startswith("Session orchestrator offline")
    assert "HOT: finish the login form" in run.context
    assert "Login form half done" in run.context and "- tests" in run.context
    assert run.output["systemMessage"]
    # The start itself waits in the spool, under the session id the client made up.
    mapped = offline_project.mapped(SESSION)
    (start,) = offline_project.spooled()
    assert start["tool"] == "start_session"
    assert start["arguments"]["sessionId"] == mapped["sessionId"]
    assert start["arguments"]["projectDir"] == str(offline_project.root)


def test_session_start_offline_without_a_local_copy_still_says_so(offline_project):
    run = offline_project.hook("SessionStart", fixture("session_start_startup"))
    assert "offline" in run.context and len(run.context) < 10_000


def test_calls_are_spooled_in_the_order_they_were_made(offline_project):
    offline_project.hook("SessionStart", fixture("session_start_startup"))
    offline_project.hook("PostToolUse", fixture("post_tool_use_edit"))  # buffered (throttle)
    offline_project.hook("Stop", fixture("stop"))
    offline_project.hook("PreCompact", fixture("pre_compact_auto"))
    offline_project.hook("SessionEnd", fixture("session_end_other"))
    tools = [item["tool"] for item in offline_project.spooled()]
    assert tools == ["start_session", "record_activity", "record_activity",
                     "append_session_event", "record_activity", "end_session"]
    spooled = offline_project.spooled()
    session_id = offline_project.mapped(SESSION)["sessionId"]
    assert {item["arguments"]["sessionId"] for item in spooled} == {session_id}
    edit = spooled[1]["arguments"]["toolUses"][0]
    assert edit["tool"] == "Edit" and edit["filePaths"] == ["/home/dev/project/src/auth.ts"]
    assert spooled[1]["arguments"]["conversationSummary"].endswith(
        "I've refactored login() to use TokenClient and the auth tests pass.")


def test_edited_paths_inside_the_project_are_stored_relative(offline_project):
    offline_project.hook("SessionStart", fixture("session_start_startup"))
    payload = fixture("post_tool_use_edit")
    payload["tool_input"]["file_path"] = str(offline_project.root / "src" / "auth.ts")
    offline_project.hook("PostToolUse", payload)
    offline_project.hook("Stop", fixture("stop"))
    flushed = offline_project.spooled()[1]["arguments"]["toolUses"]
    assert flushed[0]["filePaths"] == ["src/auth.ts"]


def test_a_project_not_set_up_is_left_alone(tmp_path):
    from tests.client.conftest import Project

    project = Project(tmp_path / "p", "http://127.0.0.1:9", "t")
    (project.state / "config.json").unlink()
    run = project.hook("SessionStart", fixture("session_start_startup"))
    assert run.returncode == 0 and run.stdout == ""
    assert not (project.state / "spool").exists()


def test_garbage_on_stdin_exits_zero(offline_project):
    for data in ("", "not json", "[1, 2]", '{"session_id": 5}', "\x00\xff"):
        for event in ("SessionStart", "PostToolUse"):
            done = subprocess.run(hook_argv(event), input=data, capture_output=True,
                                  text=True, timeout=30, cwd=offline_project.root)
            assert done.returncode == 0, (event, data)


def imported_modules(stderr: str) -> set[str]:
    """Module names from ``python -X importtime`` (PYTHONPROFILEIMPORTTIME) output."""
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines()
            if line.startswith("import time:")}


def test_a_buffered_tool_use_takes_the_fast_path_and_buffers_what_the_handler_would(
        offline_project):
    # Flushed a moment ago, nothing spooled: all there is to do is buffer the tool use.
    activity = offline_project.state / "activity"
    activity.mkdir(parents=True)
    (activity / f"{SESSION}.flushed").touch()
    payload = fixture("post_tool_use_edit")
    payload["tool_input"]["file_path"] = str(offline_project.root / "src" / "auth.ts")
    fast = offline_project.hook("PostToolUse", payload, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert fast.returncode == 0 and fast.stdout == ""
    imported = imported_modules(fast.stderr)
    assert "orchestrator_hook.lite" in imported
    heavy = {"site", "pathlib", "dataclasses", "inspect", "typing", "contextlib", "socket",
             "traceback", "orchestrator_hook.handlers", "orchestrator_hook.config"}
    assert not imported & heavy, imported & heavy
    assert not (offline_project.state / "spool").exists()

    # A due flush runs the full handler: it buffers the same entry, then sends both.
    failure = fixture("post_tool_use_failure_bash")
    offline_project.hook("PostToolUseFailure", failure)
    full = offline_project.hook("PostToolUse", payload,
                                env={"ORCHESTRATOR_FLUSH_SECONDS": "0",
                                     "PYTHONPROFILEIMPORTTIME": "1"})
    imported = imported_modules(full.stderr)
    assert "orchestrator_hook.handlers" in imported
    # The full path too does without the heaviest (dataclasses imports inspect; a str host
    # makes getaddrinfo import the idna codec, with stringprep and unicodedata).
    assert not imported & {"site", "dataclasses", "inspect", "typing", "encodings.idna"}, \
        imported
    (flushed,) = [item for item in offline_project.spooled() if item["tool"] == "record_activity"]
    uses = flushed["arguments"]["toolUses"]
    for use in uses:
        assert use.pop("timestamp").endswith("Z")
    assert uses[0] == uses[2] == {"tool": "Edit", "success": True,
                                  "summary": f"Edit {payload['tool_input']['file_path']}",
                                  "filePaths": ["src/auth.ts"]}
    assert uses[1]["tool"] == "Bash" and uses[1]["success"] is False
    assert " failed: " in uses[1]["summary"]


def test_the_orchestrator_hook_script_still_works(offline_project):
    done = subprocess.run([HOOK, "--version"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0 and done.stdout.startswith("orchestrator-hook ")
    run = offline_project.hook("SessionStart", fixture("session_start_startup"), runner=HOOK)
    assert "offline" in run.context
    offline_project.hook("PostToolUse", fixture("post_tool_use_bash"), runner=HOOK)
    offline_project.hook("Stop", fixture("stop"), runner=HOOK)
    (_, flushed) = offline_project.spooled()
    assert [use["tool"] for use in flushed["arguments"]["toolUses"]] == ["Bash"]
