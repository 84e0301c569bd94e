"""Helpers to run the real hook client on Claude Code's fixtures, with the very command
``manage.py claude_setup`` writes into ``.claude/settings.json``, through ``sh -c`` as
Claude Code runs it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from orchestrator_hook import install

# Claude Code's hook payloads as its real binary sends them (a copy kept in the repository:
# the suite runs from a clone with nothing beside it).
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "protocol"
# The console script, still installed for manual use.
HOOK = str(Path(sys.executable).parent / "orchestrator-hook")
# What claude_setup installs: this Python, -S, the launcher.
RUNNER = install.launcher_runner(sys.executable)


def hook_argv(event: str, runner: str | list[str] = RUNNER) -> list[str]:
    """The process Claude Code starts for a command hook (shell form: ``sh -c``)."""
    return ["sh", "-c", install.hook_command(runner, event)]


def fixture(name: str, **overrides: Any) -> dict[str, Any]:
    payload = json.loads((FIXTURES / f"{name}.json").read_text())
    payload.update(overrides)
    return payload


@dataclass
class HookRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float

    @property
    def output(self) -> dict[str, Any] | None:
        return json.loads(self.stdout) if self.stdout.strip() else None

    @property
    def context(self) -> str:
        output = self.output or {}
        return (output.get("hookSpecificOutput") or {}).get("additionalContext", "")


class Project:
    """A project directory set up for the hook client (config written as claude_setup does)."""

    def __init__(self, root: Path, url: str, token: str, task_id: str | None = None) -> None:
        self.root = root
        self.state = root / ".claude" / "orchestrator"
        self.configure(url, token, task_id)

    def configure(self, url: str, token: str, task_id: str | None = None) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        config = {"url": url, "token": token}
        if task_id:
            config["taskId"] = task_id
        (self.state / "config.json").write_text(json.dumps(config))

    def hook(self, event: str, payload: dict[str, Any], *, env: dict[str, str] | None = None,
             runner: str | list[str] = RUNNER) -> HookRun:
        payload = {**payload, "cwd": str(self.root)}
        started = time.monotonic()
        done = subprocess.run(hook_argv(event, runner), input=json.dumps(payload),
                              capture_output=True, text=True, timeout=30, cwd=self.root,
                              env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(self.root),
                                   # The hook's parent here is pytest: no watchdog bound to
                                   # it, except in tests/client/test_watchdog.py.
                                   "ORCHESTRATOR_WATCHDOG": "0", **(env or {})})
        return HookRun(done.returncode, done.stdout, done.stderr, time.monotonic() - started)

    def spooled(self) -> list[dict[str, Any]]:
        folder = self.state / "spool"
        return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]

    def mapped(self, claude_session: str) -> dict[str, Any] | None:
        path = self.state / "sessions.json"
        return json.loads(path.read_text()).get(claude_session) if path.exists() else None

    def log(self) -> str:
        path = self.state / "hook.log"
        return path.read_text() if path.exists() else ""


def dead_url() -> str:
    """A real port with nothing listening: the service is down."""
    from tests.conftest import free_port

    return f"http://127.0.0.1:{free_port()}"


@pytest.fixture
def offline_project(tmp_path) -> Project:
    return Project(tmp_path / "project", dead_url(), "token-of-a-service-that-is-down")


def git_repository(path: Path, branch: str) -> Path:
    path.mkdir(parents=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent", "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    for argv in (["init", "-q", "-b", branch], ["commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", *argv], cwd=path, check=True, env=env, capture_output=True)
    return path


@pytest.fixture
def shop(live_api, tmp_path, tools_live):
    """A project `shop` (registered, as claude_setup does) and its token; no task set."""
    url, token = live_api
    tools_live("create_project", {"projectId": "github.com:acme:shop", "name": "shop"})

    def make(name: str, branch: str | None = "feature/login") -> Project:
        root = git_repository(tmp_path / name, branch) if branch else tmp_path / name
        root.mkdir(parents=True, exist_ok=True)
        project = Project(root, url, token)
        config = json.loads((project.state / "config.json").read_text())
        (project.state / "config.json").write_text(json.dumps(
            {**config, "projectId": "github.com:acme:shop"}))
        return project

    return make


@pytest.fixture
def tools_live(live_api):
    import httpx

    url, token = live_api

    def call(tool, payload):
        response = httpx.post(f"{url}/api/v1/tools/{tool}/", json=payload,
                              headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    return call
