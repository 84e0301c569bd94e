"""``orchestrator-agent EVENT`` (or ``orchestrator-hook EVENT``, what older setups wrote):
the command Claude Code runs for each hook; ``orchestrator-agent setup ...`` sets a
project up (``agent_setup``).

Exit status is always 0 and stdout holds either nothing or the one JSON object Claude
Code reads (SessionStart's additionalContext): a hook that fails must never block or
confuse the agent. What went wrong is written to ``.claude/orchestrator/hook.log``.

This module is imported on every hook, the PostToolUse fast path included: at module
level it imports only what ``lite`` does (see there); the rest is imported when needed.
"""

from __future__ import annotations

import json
import os
import sys
import time

from orchestrator_hook import lite

# Wall-clock budget of one hook process per event, in seconds. SessionEnd hooks share a
# 1.5 s budget in Claude Code, Python's start-up included; PostToolUse runs on every tool
# call. A call that would outlast its budget is spooled instead.
BUDGET_SECONDS = {
    "SessionStart": 4.0,
    "PostToolUse": 1.0,
    "PostToolUseFailure": 1.0,
    "Stop": 2.0,
    "PreCompact": 3.0,
    "PostCompact": 2.0,
    "SessionEnd": 1.0,
    "StopFailure": 2.0,
    "PreToolUse": 1.0,
    # The check before an edit (edit_check): it waits for the service at most 0.2 s.
    "PreEdit": 1.0,
    "UserPromptSubmit": 1.5,
    "SubagentStart": 1.0,
    "SubagentStop": 2.0,
    # Not a Claude Code event: the watchdog's report of a process that died without a
    # SessionEnd (``--crashed CLAUDE_SESSION``); nobody waits for it.
    "Crashed": 20.0,
}
EVENT_NAMES = {name.lower(): name for name in BUDGET_SECONDS}


def event_name(text: str) -> str:
    """'SessionStart', 'session-start' and 'session_start' all name SessionStart."""
    return EVENT_NAMES.get(text.replace("-", "").replace("_", "").lower(), text)


def run(event: str, payload: dict[str, object], started: float) -> dict[str, object] | None:
    # Imported here so that `--version`, a misconfigured project and the PostToolUse fast
    # path cost nothing more.
    from pathlib import Path

    from orchestrator_hook.config import load_config
    from orchestrator_hook.handlers import HANDLERS, Hook
    from orchestrator_hook.service import Service
    from orchestrator_hook.state import ProjectState

    handler = HANDLERS.get(event)
    if handler is None:
        return None
    project_dir = Path(lite.project_dir_of(payload))
    config = load_config(project_dir)
    if not config.usable:
        return None  # this project was not set up with `manage.py claude_setup`
    state = ProjectState(project_dir)
    service = Service(state, config, started + BUDGET_SECONDS[event])
    try:
        return handler(Hook(event, payload, project_dir, state, config, service))
    except Exception:
        import traceback

        state.log(f"{event} failed:\n{traceback.format_exc()}")
        return None


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        from orchestrator_hook import __version__
        print(f"orchestrator-hook {__version__}")
        return 0
    if argv[:1] == ["setup"]:
        # `orchestrator-agent setup ...`: the one command a user types (agent_setup).
        from orchestrator_hook.agent_setup import main as setup_main

        return setup_main(argv[1:])
    try:
        if argv[:1] == ["--crashed"] and len(argv) == 2:
            payload: dict[str, object] = {"session_id": argv[1], "cwd": os.getcwd(),
                                          "hook_event_name": "Crashed"}
            run("Crashed", payload, started)
            return 0
        raw = sys.stdin.buffer.read() if not sys.stdin.isatty() else b""
        payload = json.loads(raw) if raw.strip() else {}
        if not isinstance(payload, dict):
            payload = {}
        if argv[:1] == ["--agent"] and len(argv) >= 3:
            answer = run_agent(argv[1], argv[2], payload, started)
            if answer:
                sys.stdout.write(json.dumps(answer, ensure_ascii=False))
                sys.stdout.flush()
            return 0
        event = event_name(argv[0] if argv else str(payload.get("hook_event_name") or ""))
        if event == "PreEdit":
            from orchestrator_hook.edit_check import main_output

            sys.stdout.write(main_output(payload))
            sys.stdout.flush()
            return 0
        if buffered(event, payload):
            return 0
        output = run(event, payload, started)
        if output:
            sys.stdout.write(json.dumps(output, ensure_ascii=False))
            sys.stdout.flush()
    except Exception:  # never a non-zero exit: stderr of an exit 0 goes to the debug log
        import traceback

        traceback.print_exc()
    return 0


def run_agent(kind: str, native_event: str, payload: dict[str, object], started: float,
              ) -> dict[str, object] | None:
    """``--agent KIND EVENT``: another agent's hook (``agents``). Its adapter turns the
    native event into canonical ones, each runs as Claude Code's would (the edit check,
    the PostToolUse fast path, the full handler), and the adapter shapes the answers."""
    from orchestrator_hook import agents

    adapter = agents.adapter(kind)
    results = []
    for event, normal in adapter.translate(native_event, payload):
        if event == agents.BEFORE_EDIT:
            from orchestrator_hook.edit_check import check_edit

            output = check_edit(normal)
        elif buffered(event, normal):
            output = None
        else:
            output = run(event, normal, started)
        results.append((event, normal, output))
    return adapter.answer(native_event, results)


def buffered(event: str, payload: dict[str, object]) -> bool:
    """The PostToolUse fast path (``lite.buffer_tool_use``); False: run the full handler.
    Whatever goes wrong here, the full handler runs and logs it."""
    try:
        return lite.buffer_tool_use(event, payload)
    except Exception:
        return False
