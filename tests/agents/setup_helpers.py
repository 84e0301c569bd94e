"""Set a project up for an agent with ``manage.py claude_setup --agent``, as a user runs
it: the agent's home (Codex's user config, Gemini's trusted folders) is the test's."""

from __future__ import annotations

import contextlib
import json
import os
from io import StringIO
from pathlib import Path

from django.core.management import call_command
from django.core.management.base import CommandError

from tests.agent_runner import Agent, Codex
from tests.claude_code.orchestrator_server import OrchestratorServer


@contextlib.contextmanager
def agent_environment(agent: Agent):
    """HOME, CODEX_HOME and PATH of ``agent`` for the setup running in this process."""
    saved = {key: os.environ.get(key) for key in ("HOME", "CODEX_HOME", "PATH",
                                                  "CODEX_BINARY")}
    os.environ["HOME"] = str(agent.home)
    os.environ["PATH"] = f"{agent.binary.parent}:{saved['PATH'] or '/usr/bin:/bin'}"
    if isinstance(agent, Codex):
        os.environ["CODEX_HOME"] = str(agent.codex_home)
        os.environ["CODEX_BINARY"] = str(agent.binary)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def agent_setup(agent: Agent, project: Path, server: OrchestratorServer, token: str | None,
                task_id: str | None = None, *extra: str) -> str:
    out = StringIO()
    args = ["--project-dir", str(project), "--url", server.url, "--agent", agent.kind,
            *(["--token", token] if token else []), *(["--task", task_id] if task_id else []),
            *extra]
    with agent_environment(agent):
        call_command("claude_setup", *args, stdout=out)
    return out.getvalue()


def agent_check(agent: Agent, project: Path) -> str:
    out = StringIO()
    with agent_environment(agent):
        try:
            call_command("claude_setup", "--project-dir", str(project), "--agent", agent.kind,
                         "--check", stdout=out)
        except CommandError as exc:
            return f"{out.getvalue()}\n{exc}"
    return out.getvalue()


def mapped_sessions(project: Path) -> dict[str, dict]:
    """The client's map: agent session id -> entry (sessionId, agentPid, agentKind...)."""
    return json.loads((project / ".claude" / "orchestrator" / "sessions.json").read_text())
