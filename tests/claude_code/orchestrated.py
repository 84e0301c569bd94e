"""Helpers of the tests where Claude Code runs with our hooks: set a project up with
``claude_setup``, call tools over HTTP as another client would, read what the hooks left."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from io import StringIO
from pathlib import Path
from typing import Any

from django.core.management import call_command

from orchestrator_hook.project import identify
from tests.claude_code.orchestrator_server import OrchestratorServer
from tests.conftest import metrics_token


def call_tool(server: OrchestratorServer, token: str, tool: str, payload: dict[str, Any],
              ) -> dict[str, Any]:
    request = urllib.request.Request(
        f"{server.url}/api/v1/tools/{tool}/", data=json.dumps(payload).encode(),
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def register_project(server: OrchestratorServer, token: str, directory: Path) -> str:
    """The project claude_setup will find for ``directory``, registered now (tests make
    their tasks before the setup); its key."""
    identity = identify(directory)
    try:
        call_tool(server, token, "create_project", {"projectId": identity.key,
                                                    "name": identity.name})
    except urllib.error.HTTPError as exc:
        if exc.code != 409:  # E1606: there already (a second clone)
            raise
    return identity.key


def tool_calls(server: OrchestratorServer, tool: str) -> float:
    """How many calls of ``tool`` the server process answered (its Prometheus counter;
    the server runs one worker, so this is every call)."""
    request = urllib.request.Request(f"{server.url}/metrics",
                                     headers={"Authorization": f"Bearer {metrics_token()}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    prefix = "session_orchestration_tool_calls_total{"
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith(prefix) and f'tool="{tool}"' in line)


def claude_setup(project: Path, server: OrchestratorServer, token: str | None,
                 task_id: str | None = None) -> str:
    """``manage.py claude_setup`` for the project, as a user runs it; returns its output.
    Without ``token`` it issues one limited to the directory's project, as for a newcomer."""
    out = StringIO()
    args = ["--project-dir", str(project), "--url", server.url,
            *(["--token", token] if token else [])]
    call_command("claude_setup", *args, *(["--task", task_id] if task_id else []), stdout=out)
    return out.getvalue()


def state_dir(project: Path) -> Path:
    return project / ".claude" / "orchestrator"


def our_session_id(project: Path, claude_session_id: str) -> str:
    """The orchestrator session the hook client mapped this Claude session to."""
    mapping = json.loads((state_dir(project) / "sessions.json").read_text())
    entry = mapping[claude_session_id]
    return entry if isinstance(entry, str) else entry["sessionId"]


def spooled(project: Path) -> list[Path]:
    spool = state_dir(project) / "spool"
    return sorted(p for p in spool.iterdir() if p.is_file()) if spool.exists() else []
